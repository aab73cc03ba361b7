#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 14: 1,000 concurrent clients for 60 s, target 0 errors. gpuaasd
# (release build, default settings) on SQLite with a simulated fleet; wrk on
# the same machine holds CONNS keep-alive connections from 127.0.0.1: CONNS -
# SUBMIT of them GET /v1/whoami with a bearer token (bench/api_get.lua), SUBMIT
# of them POST /v1/workloads with a unique idempotency key each
# (bench/api_submit.lua; the work queues and runs on the simulated fleet).
# Prints requests/s, p50/p99 (wrk --latency), errors (socket errors: connect,
# read, write, timeout -- wrk's timeout is 2 s -- and non-2xx answers), the
# daemon's peak RSS, the peak of the listening socket's accept queue (clients
# connected that the daemon has not accepted yet; ss, every 0.05 s) and a
# PASS/FAIL line. Exit status 0 only on PASS.
# Usage: bench/reliability/load_bench.sh [seconds=60] [conns=1000] [submit=100]
# WRK_TIMEOUT (default 2s, wrk's own) is how long a request may take before it
# counts as a timeout error; BENCH_NO_BUILD=1 uses the build as it is;
# BENCH_BUILD (default build) is the build folder to take gpuaasd and gpuaas from.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-60}
conns=${2:-1000}
submit=${3:-100}
get=$((conns - submit))
[ "$get" -ge 2 ] || { echo "conns must exceed submit by 2 or more" >&2; exit 2; }
build=${BENCH_BUILD:-build}
if [ -z "${BENCH_NO_BUILD:-}" ]; then
  bash scripts/deps.sh
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build" -j"$(nproc)" --target gpuaasd gpuaas >/dev/null
fi
# Each connection is a descriptor at both ends (wrk and gpuaasd inherit this limit).
need=$((conns + 1024))
[ "$(ulimit -n)" -ge "$need" ] || ulimit -n "$need" ||
  { echo "cannot raise the open-file limit to $need (hard limit $(ulimit -Hn))" >&2; exit 2; }
TMP=$(mktemp -d /tmp/gpuaas-load.XXXXXX)
pid=
sampler=
cleanup() {
  [ -n "$sampler" ] && kill "$sampler" 2>/dev/null && wait "$sampler" 2>/dev/null
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT

cat >"$TMP/fleet.json" <<'JSON'
{"nodes":[{"name":"gpu","cpu_milli":64000,"memory_mib":524288,"gpus":8,"model":"H100","count":32}]}
JSON
"$build"/src/gpuaasd --listen 127.0.0.1:0 --db "$TMP/bench.db" --bootstrap-token-file "$TMP/token" \
  --sim-fleet "$TMP/fleet.json" >/dev/null 2>"$TMP/daemon.log" &
pid=$!
for _ in $(seq 300); do grep -q msg=ready "$TMP/daemon.log" && break; sleep 0.1; done
grep -q msg=ready "$TMP/daemon.log" || { echo "gpuaasd did not start" >&2; cat "$TMP/daemon.log" >&2; exit 1; }
port=$(grep msg=ready "$TMP/daemon.log" | sed -E 's/.* port=([0-9]+).*/\1/')
url="http://127.0.0.1:$port"
export GPUAAS_CONFIG=$TMP/cli.conf
g=("$build/src/gpuaas" --server "$url" --token "$(cat "$TMP/token")")
"${g[@]}" org create load >/dev/null
"${g[@]}" project create burst --org load >/dev/null
"${g[@]}" pool create fleet --owner-project load/burst --cluster sim >/dev/null
"${g[@]}" quota create --project load/burst --gpu-class h100 --limit-milli 256000 >/dev/null
"${g[@]}" flavor create h100.1x --gpu-class h100 --gpu-milli 1000 --vcpus 4 --memory-mib 16384 \
  --price-per-hour-micros 2500000 >/dev/null
export GPUAAS_TOKEN=$(cat "$TMP/token")
export GPUAAS_PROJECT=$("${g[@]}" -o json project show load/burst | jq -r .id)
export GPUAAS_FLAVOR=$("${g[@]}" -o json flavor show h100.1x | jq -r .id)
export GPUAAS_DURATION=2

echo "load: $(nproc) cores, commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo +dirty)," \
  "open-file limit $(ulimit -n); $(grep -o 'threads=[0-9]*' "$TMP/daemon.log");" \
  "wrk ${secs}s (timeout ${WRK_TIMEOUT:-2s}): $get connections GET /v1/whoami, $submit POST /v1/workloads"
timeout=${WRK_TIMEOUT:-2s}
# The listening socket's Recv-Q is its accept queue: connections the kernel has
# completed that gpuaasd has not accepted yet.
(while :; do ss -Hltn "sport = :$port" | awk '{print $2}'; sleep 0.05; done) >"$TMP/acceptq" 2>/dev/null &
sampler=$!
wrk -t2 -c"$get" -d"${secs}s" --timeout "$timeout" --latency -s bench/api_get.lua "$url/v1/whoami" >"$TMP/get.out" 2>&1 &
wget=$!
wrk -t1 -c"$submit" -d"${secs}s" --timeout "$timeout" --latency -s bench/api_submit.lua "$url/v1/workloads" >"$TMP/sub.out" 2>&1 &
wsub=$!
wait "$wget" || true
wait "$wsub" || true
{ kill "$sampler" && wait "$sampler"; } 2>/dev/null || true
sampler=

# report FILE LABEL: one line from wrk's output; sets ERRS to its error count.
report() {
  local f=$1 label=$2 rps p50 p99 max sock non2xx
  rps=$(awk '/Requests\/sec/ {print $2}' "$f")
  p50=$(awk '$1 == "50%" {print $2}' "$f")
  p99=$(awk '$1 == "99%" {print $2}' "$f")
  max=$(awk '$1 == "Latency" && NF >= 4 {print $4; exit}' "$f")
  sock=$(grep -o 'Socket errors:.*' "$f" || echo "Socket errors: none")
  non2xx=$(awk '/Non-2xx/ {print $NF}' "$f")
  # "Socket errors: connect 0, read 0, write 0, timeout 0": the sum of its numbers
  ERRS=$(awk '/Socket errors:/ {for (i = 3; i <= NF; i++) s += $i} END {print s + 0}' "$f")
  ERRS=$((ERRS + ${non2xx:-0}))
  echo "$label: ${rps:-?} req/s, p50 ${p50:-?}, p99 ${p99:-?}, max ${max:-?}; $sock; non-2xx ${non2xx:-0}"
}
report "$TMP/get.out" "GET /v1/whoami ($get conns)"
e1=$ERRS
report "$TMP/sub.out" "POST /v1/workloads ($submit conns)"
e2=$ERRS
grep -E '^completed=' "$TMP/sub.out" || true
rss=$(awk '/VmHWM/ {print $2 " " $3}' "/proc/$pid/status" 2>/dev/null || echo "?")
alive=yes
kill -0 "$pid" 2>/dev/null || alive=no
acceptq=$(sort -n "$TMP/acceptq" | tail -1)
echo "gpuaasd peak RSS $rss, accept queue peak ${acceptq:-?}, alive after the run: $alive; its log, lines other than info:"
{ grep -v 'level=info' "$TMP/daemon.log" || true; } | sed -E 's/^time=[^ ]+ //; s/request_id=[^ ]+ //' |
  sort | uniq -c | sort -rn | head -5
if [ "$e1" = 0 ] && [ "$e2" = 0 ] && [ "$alive" = yes ]; then
  echo "PASS: $conns concurrent clients for ${secs}s, 0 errors"
else
  echo "FAIL: $conns concurrent clients for ${secs}s: $((e1 + e2)) errors"
  [ "$alive" = yes ] || tail -20 "$TMP/daemon.log"
  grep -h "" "$TMP/get.out" "$TMP/sub.out" | grep -iE 'error|unable|timeout' | head -5
  exit 1
fi
