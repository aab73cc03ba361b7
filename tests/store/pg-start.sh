#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# pg-start.sh [STATE_DIR]: starts a throwaway PostgreSQL server for tests and
# prints its URL, postgresql://postgres@127.0.0.1:PORT/gpuaas_test.
#
# The cluster lives in a fresh directory under $TMPDIR (/tmp), listens on
# 127.0.0.1 only, on a free port, with trust authentication and fsync off:
# for tests, never for data. STATE_DIR (default: the cluster directory) gets
# the files pg-stop.sh needs: url, root and bin. Run as root, the server runs
# as the `postgres` OS user, since PostgreSQL refuses to run as root.
# Set PG_BIN to pick the server binaries; otherwise the newest
# /usr/lib/postgresql/*/bin, then initdb on PATH.
set -euo pipefail

me=pg-start.sh
die() {
    echo "$me: $*" >&2
    exit 1
}

find_bin() {
    local d
    if [ -n "${PG_BIN:-}" ]; then
        echo "$PG_BIN"
        return
    fi
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
            echo "$d"
            return
        fi
    done
    if command -v initdb >/dev/null 2>&1; then
        dirname "$(command -v initdb)"
    fi
}

bin=$(find_bin)
[ -n "$bin" ] && [ -x "$bin/initdb" ] && [ -x "$bin/pg_ctl" ] ||
    die "PostgreSQL server binaries (initdb, pg_ctl) not found; install the postgresql server package or set PG_BIN"

# PostgreSQL will not run as root: run the server's commands as `postgres` then.
as_server_user() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}
if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
    die "running as root needs a 'postgres' OS user to run the server as"
fi

state=${1:-}
if [ -n "$state" ] && [ -f "$state/root" ]; then
    # A server left behind by an interrupted run: stop it first.
    "$(dirname "$0")/pg-stop.sh" "$state" || true
fi

root=$(mktemp -d "${TMPDIR:-/tmp}/gpuaas-pg.XXXXXX")
[ "$(id -u)" = 0 ] && chown postgres: "$root"
state=${state:-$root}
mkdir -p "$state"

as_server_user "$bin/initdb" -D "$root/data" -U postgres -A trust -E UTF8 --no-locale \
    >"$root/initdb.log" 2>&1 || {
    cat "$root/initdb.log" >&2
    rm -rf "$root"
    die "initdb failed"
}

port_in_use() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Try ports from a random base: another run may take one between the check
# and the start, so a start that cannot bind moves on to the next port.
base=$((20000 + RANDOM % 30000))
port=
for i in $(seq 0 49); do
    p=$((base + i))
    port_in_use "$p" && continue
    if as_server_user "$bin/pg_ctl" -D "$root/data" -l "$root/server.log" -w -t 60 \
        -o "-p $p -c listen_addresses=127.0.0.1 -c unix_socket_directories=$root -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
        start >/dev/null 2>&1; then
        port=$p
        break
    fi
    if ! grep -q -e "could not bind" -e "already in use" "$root/server.log" 2>/dev/null; then
        tail -n 20 "$root/server.log" >&2 || true
        rm -rf "$root"
        die "the server did not start"
    fi
done
[ -n "$port" ] || {
    rm -rf "$root"
    die "found no free port"
}

echo "$root" >"$state/root"
echo "$bin" >"$state/bin"
"$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres gpuaas_test ||
    {
        "$(dirname "$0")/pg-stop.sh" "$state"
        die "createdb failed"
    }
url="postgresql://postgres@127.0.0.1:$port/gpuaas_test"
echo "$url" >"$state/url"
echo "$url"
