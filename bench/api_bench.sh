#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 2's API benchmark: authenticated GET of one object and project
# creation, 64 connections, with wrk on this machine, on SQLite and on
# PostgreSQL. Prints each run, the medians and the daemon's peak RSS.
# Usage: bench/api_bench.sh [runs=5] [seconds=10]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
secs=${2:-10}
bash scripts/deps.sh
build=${BENCH_BUILD:-build}
bash scripts/build.sh "$build" >/dev/null
TMP=$(mktemp -d /tmp/gpuaas-bench.XXXXXX)
pid=
pg_dir=
cleanup() {
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [ -n "$pg_dir" ] && bash tests/store/pg-stop.sh "$pg_dir" >/dev/null 2>&1
  rm -rf "$TMP"
}
trap cleanup EXIT

median() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.0f", m}'; }
rps() { grep "Requests/sec" | awk '{print $2}'; }

bench_store() { # label db-url
  local label=$1 db=$2
  rm -f "$TMP/token"
  "$build"/src/gpuaasd --listen 127.0.0.1:0 --db "$db" --threads 2 --db-pool 4 \
    --bootstrap-token-file "$TMP/token" >/dev/null 2>"$TMP/daemon.log" &
  pid=$!
  for _ in $(seq 200); do grep -q msg=ready "$TMP/daemon.log" && break; sleep 0.05; done
  local port url token org
  port=$(grep msg=ready "$TMP/daemon.log" | sed -E 's/.* port=([0-9]+).*/\1/')
  url="http://127.0.0.1:$port"
  token=$(cat "$TMP/token")
  org=$(curl -sS -X POST -H "Authorization: Bearer $token" -H "Content-Type: application/json" \
    --data '{"name":"bench"}' "$url/v1/organizations" | jq -r .id)
  export GPUAAS_TOKEN=$token GPUAAS_ORG=$org
  local gets=() creates=()
  for i in $(seq "$runs"); do
    g=$(wrk -t2 -c64 -d"${secs}s" -s bench/api_get.lua "$url/v1/organizations/$org" | tee "$TMP/get.$i" | rps)
    c=$(wrk -t2 -c64 -d"${secs}s" -s bench/api_create.lua "$url/v1/projects" | tee "$TMP/create.$i" | rps)
    if grep -q "Non-2xx" "$TMP/get.$i" "$TMP/create.$i"; then
      echo "$label run $i: errors:"; grep -h "Non-2xx" "$TMP/get.$i" "$TMP/create.$i"
    fi
    echo "$label run $i: GET $g req/s, create $c req/s"
    gets+=("$g"); creates+=("$c")
  done
  local rss
  rss=$(awk '/VmHWM/ {print $2 " " $3}' "/proc/$pid/status")
  echo "$label median: GET $(printf '%s\n' "${gets[@]}" | median) req/s," \
    "create $(printf '%s\n' "${creates[@]}" | median) req/s, peak RSS $rss"
  kill -TERM "$pid"; wait "$pid" || true; pid=
}

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo);" \
  "wrk -t2 -c64 -d${secs}s, $runs runs; gpuaasd --threads 2"
bench_store sqlite "$TMP/bench.db"
pg_dir=$TMP/pg
pg_url=$(bash tests/store/pg-start.sh "$pg_dir")
bench_store postgresql "$pg_url"
