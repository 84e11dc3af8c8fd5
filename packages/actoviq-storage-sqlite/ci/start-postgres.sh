#!/usr/bin/env bash
# Start (or reuse) the throwaway PostgreSQL 15 cluster used by the storage tests, then print
#   export ACTOVIQ_TEST_POSTGRES_URL=postgresql://postgres@127.0.0.1:54329/actoviq_test
# Idempotent: a running cluster on the port is reused and the database is created only once.
# Usage: eval "$(packages/actoviq-storage-sqlite/ci/start-postgres.sh)"
set -euo pipefail

PORT="${ACTOVIQ_PG_PORT:-54329}"
DB="${ACTOVIQ_PG_DB:-actoviq_test}"
TMPDIR_PG="${TMPDIR_PG:-/tmp/actoviq-pg}"
PGBIN="${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)}"
URL="postgresql://postgres@127.0.0.1:${PORT}/${DB}"

log() { echo "start-postgres: $*" >&2; }

if [[ -z "${PGBIN}" || ! -x "${PGBIN}/pg_ctl" ]]; then
  log "PostgreSQL binaries not found (apt-get install -y postgresql)"; exit 1
fi

as_postgres() {
  if [[ "$(id -u)" == "0" ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

if ! "${PGBIN}/pg_isready" -q -h 127.0.0.1 -p "${PORT}"; then
  if [[ "$(id -u)" == "0" ]]; then
    install -d -o postgres -g postgres "${TMPDIR_PG}"
  else
    mkdir -p "${TMPDIR_PG}"
  fi
  if [[ ! -f "${TMPDIR_PG}/data/PG_VERSION" ]]; then
    as_postgres "${PGBIN}/initdb" -D "${TMPDIR_PG}/data" -A trust -U postgres --no-sync -E UTF8 \
      --locale=C.UTF-8 >&2
  fi
  # The server outlives this script: it must not inherit our open descriptors (above all a
  # caller's lock file, e.g. the landing lock on fd 9, which it would then hold forever).
  (
    for fd in /proc/self/fd/*; do
      fd="${fd##*/}"
      if [[ "${fd}" =~ ^[0-9]+$ && "${fd}" -gt 2 ]]; then eval "exec ${fd}>&-" 2>/dev/null || true; fi
    done
    as_postgres "${PGBIN}/pg_ctl" -D "${TMPDIR_PG}/data" -l "${TMPDIR_PG}/server.log" -w \
      -o "-c listen_addresses=127.0.0.1 -p ${PORT} -k ${TMPDIR_PG} -c fsync=off" start >&2
  )
fi

if ! "${PGBIN}/psql" -h 127.0.0.1 -p "${PORT}" -U postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname = '${DB}'" postgres | grep -q 1; then
  "${PGBIN}/createdb" -h 127.0.0.1 -p "${PORT}" -U postgres "${DB}"
fi
log "ready on 127.0.0.1:${PORT} (stop: ${PGBIN}/pg_ctl -D ${TMPDIR_PG}/data -m fast stop)"
echo "export ACTOVIQ_TEST_POSTGRES_URL=${URL}"
