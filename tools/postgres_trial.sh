#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests and for a local trial of the shared log:
# Debian's postgresql package, a cluster in a temporary directory, run as a non-root user
# (the package's `postgres` user when called as root), listening on 127.0.0.1 only.
#
#   eval "$(tools/postgres_trial.sh start)"   # exports MNEMOLOG_TEST_POSTGRES_URL and
#                                             # MNEMOLOG_POSTGRES_TRIAL (the cluster's dir)
#   tools/postgres_trial.sh restart "$MNEMOLOG_POSTGRES_TRIAL"   # fast: connections are cut
#   tools/postgres_trial.sh stop "$MNEMOLOG_POSTGRES_TRIAL"
#
# Trust authentication on loopback: for a trial on one machine, never for a shared database
# (docs/teams.md says how to run one).
set -euo pipefail

bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
if [ -z "$bin" ]; then
    echo "PostgreSQL is not installed: apt-get install postgresql" >&2
    exit 1
fi

as_owner() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "${1:-}" in
start)
    dir="$(mktemp -d /tmp/mnemolog-postgres.XXXXXX)"
    chmod 755 "$dir"
    if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    as_owner "$bin/initdb" -D "$dir/data" -U mnemolog --auth=trust --no-sync -E UTF8 >/dev/null
    # wal_recycle=off: a WAL segment past its checkpoint is deleted, not renamed for reuse
    # with its bytes (an erased key's among them) kept until overwritten (docs/teams.md).
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=200 -c wal_recycle=off" \
        start >/dev/null
    as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U mnemolog mnemolog
    echo "export MNEMOLOG_TEST_POSTGRES_URL=postgresql://mnemolog@127.0.0.1:$port/mnemolog"
    echo "export MNEMOLOG_POSTGRES_TRIAL=$dir"
    ;;
restart)
    dir="${2:?which cluster: the directory start printed}"
    case "$dir" in /tmp/mnemolog-postgres.*) ;; *) echo "not a trial cluster: $dir" >&2; exit 1 ;; esac
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -m fast -w -t 60 restart >/dev/null
    ;;
stop)
    dir="${2:?which cluster: the directory start printed}"
    case "$dir" in /tmp/mnemolog-postgres.*) ;; *) echo "not a trial cluster: $dir" >&2; exit 1 ;; esac
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
    rm -rf "$dir"
    ;;
*)
    echo "usage: $0 start | restart DIR | stop DIR" >&2
    exit 2
    ;;
esac
