#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 3's API benchmark: workload submissions through the API on SQLite,
# sustained (default 60 s, 64 connections, wrk), onto a simulated copy of the
# Alibaba GPU cluster (1213 nodes, 6212 GPUs; the flavor asks for its largest
# class, G2, 4392 GPUs) running 60x faster than real
# time, so the engine admits and completes work while submissions pour in.
# Then checks that every acknowledged submission is in the store, once, in a
# valid state, with its "submitted" event.
# Usage: bench/submit_bench.sh [seconds=60] [connections=64]
# GPUAAS_BENCH_CLASS=v100m16 uses a class of 195 GPUs instead: then nearly all work queues.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
conns=${2:-64}
data=${GPUAAS_DATA_DIR:-../shared/data}
bash scripts/deps.sh
build=${BENCH_BUILD:-build}
bash scripts/build.sh "$build" >/dev/null
TMP=$(mktemp -d /tmp/gpuaas-submit.XXXXXX)
pid=
cleanup() {
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT

"$build"/src/gpuaasd --listen 127.0.0.1:0 --db "$TMP/bench.db" --threads 2 \
  --bootstrap-token-file "$TMP/token" --sim-speed 60 \
  --sim-fleet "$data/alibaba-gpu-v2023/openb_node_list_gpu_node.csv" >/dev/null 2>"$TMP/daemon.log" &
pid=$!
for _ in $(seq 300); do grep -q msg=ready "$TMP/daemon.log" && break; sleep 0.1; done
port=$(grep msg=ready "$TMP/daemon.log" | sed -E 's/.* port=([0-9]+).*/\1/')
url="http://127.0.0.1:$port"
g=("$build/src/gpuaas" --server "$url" --token "$(cat "$TMP/token")")
export GPUAAS_CONFIG=$TMP/cli.conf
"${g[@]}" org create bench >/dev/null
"${g[@]}" project create load --org bench >/dev/null
"${g[@]}" flavor create g2.1x --gpu-class "${GPUAAS_BENCH_CLASS:-g2}" --gpu-milli 1000 --vcpus 4 --memory-mib 8192 \
  --price-per-hour-micros 1000000 >/dev/null
export GPUAAS_TOKEN=$(cat "$TMP/token")
export GPUAAS_PROJECT=$("${g[@]}" -o json project show bench/load | jq -r .id)
export GPUAAS_FLAVOR=$("${g[@]}" -o json flavor show g2.1x | jq -r .id)
export GPUAAS_DURATION=120 # 2 s of real time at 60x

wrk -t2 -c"$conns" -d"${secs}s" -s bench/api_submit.lua "$url/v1/workloads" | tee "$TMP/wrk.out"
sleep 2
completed=$(sed -nE 's/^completed=([0-9]+) errors_status=([0-9]+)$/\1/p' "$TMP/wrk.out")
errors=$(sed -nE 's/^completed=([0-9]+) errors_status=([0-9]+)$/\2/p' "$TMP/wrk.out")
rps=$(awk '/Requests\/sec/ {print $2}' "$TMP/wrk.out")
stored=$(sqlite3 "$TMP/bench.db" "SELECT count(*) FROM workloads;")
keys=$(sqlite3 "$TMP/bench.db" "SELECT count(DISTINCT idempotency_key) FROM workloads;")
events=$(sqlite3 "$TMP/bench.db" "SELECT count(*) FROM workload_events WHERE type='submitted';")
states=$(sqlite3 "$TMP/bench.db" "SELECT state || '=' || count(*) FROM workloads GROUP BY state;" | tr '\n' ' ')
rss=$(awk '/VmHWM/ {print $2 " " $3}' "/proc/$pid/status")
echo "submissions: $rps req/s over ${secs}s, $conns connections; $completed acknowledged, $errors errors"
echo "stored: $stored workloads ($keys distinct keys), $events submitted events; states: $states"
echo "daemon peak RSS: $rss"
[ "$errors" = 0 ] || { echo "FAIL: $errors submissions were refused"; exit 1; }
# wrk stops with up to one request in flight per connection: the server took
# those, wrk never read their answers. So: acknowledged <= stored <= acknowledged + connections,
# every stored one exactly once (distinct keys) with its event.
[ "$stored" -ge "$completed" ] && [ "$stored" -le $((completed + conns)) ] &&
  [ "$keys" = "$stored" ] && [ "$events" = "$stored" ] ||
  { echo "FAIL: acknowledged $completed, stored $stored ($keys keys, $events events)"; exit 1; }
echo "every acknowledged submission accounted for ($((stored - completed)) more were in flight at the end)"
