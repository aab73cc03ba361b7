#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue 8's side-by-side benchmark, one run of one script: the same workload
# (N jobs of one GPU whose command exits at once, 64 GPUs) three ways:
#   1. Slurm alone: sbatch straight to a real Slurm of 8 nodes x 8 GPUs on
#      this host (tests/slurm/slurm-up.sh);
#   2. gpuaas on `local`: 64 declared GPUs on this machine, processes
#      without cgroup limits (Slurm here enforces none either); then the
#      same burst again with each replica in its own cgroup (the default);
#   3. gpuaas on `slurm`: the same Slurm, gpuaas choosing the node and GPUs.
# Prints jobs/s end to end (first submit to last end) for each, gpuaas-local's
# submit->start p50 (from the events' times), and gpuaas-on-slurm's overhead
# over Slurm alone. The burst's p50 is queueing (N jobs for 64 GPUs at once),
# so `local` then takes N more jobs submitted at a steady 10x Slurm alone's
# jobs/s and reports their submit->start p50 and p99: the latency at the
# rate the target asks for. Needs root (slurmd).
# Usage: bench/backends_bench.sh [jobs=2000]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${SLURM_CONF:-}" ]; then
  bash scripts/deps.sh
  build=${BENCH_BUILD:-build}
  bash scripts/build.sh "$build" >/dev/null
  exec env BENCH_BUILD="$build" bash tests/slurm/with-slurm.sh 8 bash "$0" "$@"
fi
jobs=${1:-2000}
[ -n "${BENCH_TRACE:-}" ] && set -x
build=${BENCH_BUILD:-build}
TMP=$(mktemp -d /tmp/gpuaas-backends.XXXXXX)
# Workload logs and run files: BENCH_LOG_DIR (a fresh folder made inside it) to
# measure another file system than /tmp's.
logs=$TMP/logs
[ -z "${BENCH_LOG_DIR:-}" ] || logs=$(mktemp -d "$BENCH_LOG_DIR/gpuaas-logs.XXXXXX")
pid=
stop() { [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; pid=; true; }
trap 'stop; rm -rf "$TMP" "$logs"' EXIT
now_ms() { date +%s%3N; }

wait_slurm_idle() { # until no job of ours is pending or running
  while [ -n "$(squeue -h -o %i 2>/dev/null | head -1)" ]; do sleep 0.2; done
}

# ---- 1. Slurm alone ----
t0=$(now_ms)
for i in $(seq "$jobs"); do
  sbatch --parsable --gres=gpu:h100:1 --ntasks=1 --cpus-per-task=1 --mem=16 \
    -o /dev/null --wrap true >/dev/null
done
wait_slurm_idle
t1=$(now_ms)
slurm_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1000 }')

# ---- gpuaas: a daemon, a project, a flavor; N submissions, 8 at a time ----
start() { # db extra...
  local db=$1
  shift
  "$build/src/gpuaasd" --listen 127.0.0.1:0 --db "$db" --threads 2 --log-dir "$logs" \
    --bootstrap-token-file "$TMP/token" "$@" >/dev/null 2>"$TMP/daemon.log" &
  pid=$!
  for _ in $(seq 300); do grep -q msg=ready "$TMP/daemon.log" && break; sleep 0.1; done
  url="http://127.0.0.1:$(grep msg=ready "$TMP/daemon.log" | sed -E 's/.* port=([0-9]+).*/\1/')"
  token=$(cat "$TMP/token")
  g=("$build/src/gpuaas" --server "$url" --token "$token")
}
requests() { # project flavor key-prefix from to: a curl config of submissions
  for i in $(seq "$4" "$5"); do
    [ "$i" = "$4" ] || echo next
    printf 'url = "%s/v1/workloads"\nheader = "Authorization: Bearer %s"\n' "$url" "$token"
    printf 'header = "Content-Type: application/json"\noutput = "/dev/null"\n'
    printf 'data = "{\\"project_id\\":%s,\\"flavor_id\\":%s,\\"command\\":\\"true\\",\\"idempotency_key\\":\\"%s%s\\"}"\n' "$1" "$2" "$3" "$i"
  done
}
submit_all() { # project flavor -> time of the first submit
  local first
  # one curl, 16 requests at a time: the client's own cost stays out of the figures
  requests "$1" "$2" j 1 "$jobs" >"$TMP/requests"
  first=$(now_ms)
  curl -sSf --no-progress-meter --parallel --parallel-max 16 -K "$TMP/requests"
  echo "$first"
}
wait_done() { # db [count=jobs]
  while [ "$(sqlite3 "$1" "SELECT count(*) FROM workloads WHERE state IN ('succeeded','failed','cancelled');")" -lt "${2:-$jobs}" ]; do
    sleep 0.1
  done
  sqlite3 "$1" "SELECT max(at_ms) FROM workload_events WHERE type IN ('succeeded','failed');"
}
setup_tenant() { # class
  "${g[@]}" org create bench >/dev/null
  "${g[@]}" project create load --org bench >/dev/null
  "${g[@]}" flavor create one --gpu-class "$1" --gpu-milli 1000 --vcpus 1 --memory-mib 16 >/dev/null
  project=$("${g[@]}" -o json project show bench/load | jq -r .id)
  flavor=$("${g[@]}" -o json flavor show one | jq -r .id)
}

# ---- 2. gpuaas on local ----
export GPUAAS_CONFIG=$TMP/cli.conf
local_cluster() { # db [daemon flags...]: a daemon with a local cluster of 64 GPUs and the tenant
  start "$@"
  "${g[@]}" cluster create here --backend local >/dev/null
  "${g[@]}" gpu-class create h100 >/dev/null
  "${g[@]}" node create this-host --cluster here >/dev/null
  for i in $(seq 0 63); do
    "${g[@]}" gpu create --node this-host --index "$i" --gpu-class h100 --uuid "GPU-00000000-0000-0000-0000-0000000000$(printf %02d "$i")" >/dev/null
  done
  setup_tenant h100
}
# Slurm here enforces no limits (proctrack/linuxproc, no task/cgroup), so the
# figures compared with it are without cgroups too; the same burst with each
# replica in its own cgroup with the flavor's limits (the default) follows.
local_cluster "$TMP/local.db" --cgroup-root=
first=$(submit_all "$project" "$flavor")
last=$(wait_done "$TMP/local.db")
local_s=$(awk -v a="$first" -v b="$last" 'BEGIN { printf "%.2f", (b - a) / 1000 }')
submit_span=$(sqlite3 "$TMP/local.db" "SELECT max(at_ms) - min(at_ms) FROM workload_events WHERE type = 'submitted';")
waits() { # from-workload-id: submit->start of the workloads after it, "p50 p99" in ms
  sqlite3 "$TMP/local.db" "SELECT r.at_ms - s.at_ms FROM workload_events s JOIN workload_events r
    ON r.workload_id = s.workload_id AND r.type = 'running'
    WHERE s.type = 'submitted' AND s.workload_id > $1 ORDER BY 1;" |
    awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)], v[int(NR * 0.99 + 0.5)] }'
}
read -r p50 _ <<<"$(waits 0)"
# Paced: N more at 10x Slurm alone's jobs/s, from four serial curls (one
# cannot send that many a second), each at a quarter of the rate.
rate=$(awk -v n="$jobs" -v s="$slurm_s" 'BEGIN { printf "%d", 10 * n / s + 0.5 }')
before=$(sqlite3 "$TMP/local.db" "SELECT max(id) FROM workloads;")
senders=()
for k in 0 1 2 3; do
  requests "$project" "$flavor" p $((k * jobs / 4 + 1)) $(((k + 1) * jobs / 4)) >"$TMP/paced$k"
  curl -sSf --no-progress-meter --rate "$(((rate + 3) / 4))/s" -K "$TMP/paced$k" &
  senders+=($!)
done
wait "${senders[@]}"
wait_done "$TMP/local.db" $((2 * jobs)) >/dev/null
paced_span=$(sqlite3 "$TMP/local.db" "SELECT max(at_ms) - min(at_ms) FROM workload_events WHERE type = 'submitted' AND workload_id > $before;")
read -r paced_p50 paced_p99 <<<"$(waits "$before")"
stop
# The same burst with cgroups ("auto": v2, else v1), where this machine allows them.
local_cluster "$TMP/local-cg.db"
cgroups=$(grep -o 'cgroups="[^"]*"' "$TMP/daemon.log" | head -1)
first=$(submit_all "$project" "$flavor")
last=$(wait_done "$TMP/local-cg.db")
cg_s=$(awk -v a="$first" -v b="$last" 'BEGIN { printf "%.2f", (b - a) / 1000 }')
stop

# ---- 3. gpuaas on slurm ----
start "$TMP/slurm.db" --slurm-sync-s 1
"${g[@]}" gpu-class create h100 >/dev/null
"${g[@]}" cluster create sl --backend slurm --endpoint "$SLURM_CONF" >/dev/null
until [ "$("${g[@]}" -o json gpu list --limit 1000 | jq '.items | length')" = 64 ]; do sleep 0.2; done
setup_tenant h100
first=$(submit_all "$project" "$flavor")
last=$(wait_done "$TMP/slurm.db")
onslurm_s=$(awk -v a="$first" -v b="$last" 'BEGIN { printf "%.2f", (b - a) / 1000 }')
failed=$(sqlite3 "$TMP/slurm.db" "SELECT count(*) FROM workloads WHERE state != 'succeeded';")
stop

awk -v n="$jobs" -v s="$slurm_s" -v l="$local_s" -v o="$onslurm_s" -v p="$p50" -v f="$failed" \
  -v span="$submit_span" -v rate="$rate" -v pspan="$paced_span" -v pp50="$paced_p50" \
  -v pp99="$paced_p99" -v cg="$cg_s" -v cgw="${cgroups:-none: not allowed here}" 'BEGIN {
  printf "jobs %d, 64 GPUs, one run\n", n
  printf "slurm alone:      %7.2f s  %8.1f jobs/s\n", s, n / s
  printf "gpuaas on local:  %7.2f s  %8.1f jobs/s  (%.1fx slurm), submit->start p50 %d ms; the %d submissions took %.2f s\n", l, n / l, (n / l) / (n / s), p, n, span / 1000
  printf "gpuaas on local, %d more at %d/s (10x slurm alone; sent at %.0f/s): submit->start p50 %d ms, p99 %d ms\n", n, rate, n / (pspan / 1000), pp50, pp99
  printf "gpuaas on local, cgroups with the flavor limits (%s): %.2f s  %.1f jobs/s  (%.1fx slurm)\n", cgw, cg, n / cg, (n / cg) / (n / s)
  printf "gpuaas on slurm:  %7.2f s  %8.1f jobs/s  (%+.1f%% against slurm alone), %d not succeeded\n", o, n / o, (o - s) / s * 100, f
}'
