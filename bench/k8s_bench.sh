#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# gpuaas side by side with Kueue on one Kubernetes control plane (issue 16):
# the same kube-apiserver and kwok fleet (60 nodes x 10 GPUs = 600 GPUs, the
# nominal quota of Kueue's baseline: 5 cohorts x 6 queues x 20), one after the
# other in one run.
#  - Kueue v0.17 (tests/k8s/build-kueue.sh): minimalkueue (its core
#    controllers and scheduler, out of cluster) and its scheduler-performance
#    runner, which makes the ClusterQueues and Workload objects of the mix and
#    plays their run times (no pods: Kueue admits Workload objects).
#  - gpuaas on the kubernetes backend: the same teams as projects (a pool of
#    20 GPUs each, lent to its cohort = organisation; limit 120), the same
#    workloads on the same schedule through the API; every admitted replica is
#    a real Pod that kwok runs and completes.
# Then the owner's reclaim on each: a borrower fills a cohort, the owner asks
# for its 20.
#
# usage: bench/k8s_bench.sh [--scale S] [--runtime-ms A,B,C] [--rounds R] [--grace-s G]
#                           [--only kueue|gpuaas]
#   --scale 1 is Kueue's baseline (15,000 workloads); 0.2 is a quick run.
#   --runtime-ms: small,medium,large run times (default 1000,1000,1000: Kueue's
#   200/500/1000 ms rounded up to gpuaas's whole seconds, for both sides).
# Prints the table for docs/benchmarks.md; everything stays in the printed
# directory (logs, the runner's CSVs, the gpuaas store, JSON summaries).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
scale=1 runtime=1000,1000,1000 rounds=5 grace=1 only=
while [ $# -gt 0 ]; do
  case $1 in
  --scale) scale=$2 ;;
  --runtime-ms) runtime=$2 ;;
  --rounds) rounds=$2 ;;
  --grace-s) grace=$2 ;;
  --only) only=$2 ;;
  *) echo "usage: $0 [--scale S] [--runtime-ms A,B,C] [--rounds R] [--grace-s G] [--only kueue|gpuaas]" >&2; exit 2 ;;
  esac
  shift 2
done
say() { echo "k8s_bench: $*" >&2; }
py() { python3 "$src/bench/k8s_bench.py" "$@"; }
build=${BENCH_BUILD:-build}
bash scripts/build.sh "$build" >/dev/null
tests/k8s/build.sh >/dev/null
kq=
[ "$only" = gpuaas ] || kq=$(tests/k8s/build-kueue.sh)
kbin=$(sed -n 's/^kueue-build: bin=\([^ ]*\) .*/\1/p' <<<"$kq")
crds=$(sed -n 's/.* crds=\([^ ]*\) .*/\1/p' <<<"$kq")

out=$(mktemp -d /tmp/gpuaas-k8s-bench.XXXXXX)
mkdir -p "$out/kueue" "$out/kueue-reclaim" "$out/gpuaas"
kpid= gpid=
cleanup() {
  [ -n "$kpid" ] && kill -INT "$kpid" 2>/dev/null && wait "$kpid" 2>/dev/null
  [ -n "$gpid" ] && kill -TERM "$gpid" 2>/dev/null && wait "$gpid" 2>/dev/null
  tests/k8s/down.sh "$out/k8s" 2>/dev/null || true
  say "results and logs in $out"
}
trap cleanup EXIT

echo "gpu10 $((5 * 6 * 2)) 10 NVIDIA-H100-80GB-HBM3 81559 -" >"$out/nodes"
start=$(date +%s)
tests/k8s/up.sh "$out/k8s" "$out/nodes"
. "$out/k8s/env"
export KUBECONFIG
say "control plane with $((5 * 6 * 2)) nodes up in $(($(date +%s) - start)) s"
kapi() { curl -sS --cacert "$K8S_CA" -H "Authorization: Bearer $K8S_TOKEN" "$@"; }

# CPU seconds (user + system) and peak RSS (MiB) of a running process.
proc_cpu_s() { awk -v t="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15) / t }' "/proc/$1/stat"; }
proc_rss_mib() { awk '/^VmHWM:/ { print int($2 / 1024) }' "/proc/$1/status"; }
now_ms() { date +%s%3N; }

# --- Kueue -----------------------------------------------------------------------
run_kueue() {
  for f in "$crds"/*.yaml; do
    code=$(kapi -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/yaml' \
      --data-binary "@$f" "$K8S_SERVER/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
    [ "$code" = 201 ] || { say "CRD $f: HTTP $code"; exit 1; }
  done
  for _ in $(seq 100); do
    n=$(kapi "$K8S_SERVER/apis/apiextensions.k8s.io/v1/customresourcedefinitions" |
      jq '[.items[] | select(.spec.group == "kueue.x-k8s.io") | select(any(.status.conditions[]?; .type == "Established" and .status == "True"))] | length')
    [ "$n" = "$(ls "$crds"/*.yaml | wc -l)" ] && break
    sleep 0.2
  done
  py kueue-config "$out/kueue/generator.yaml" --scale "$scale" --runtime-ms "$runtime"
  py kueue-reclaim-config "$out/kueue-reclaim/generator.yaml" --rounds "$rounds"
  "$kbin/minimalkueue" --kubeconfig "$KUBECONFIG" >"$out/kueue/minimalkueue.log" 2>&1 &
  kpid=$!
  sleep 3
  kill -0 "$kpid" || { say "minimalkueue exited: $(tail -3 "$out/kueue/minimalkueue.log")"; exit 1; }
  cpu0=$(proc_cpu_s "$kpid")
  say "Kueue: the mix (scale $scale) ..."
  # The runner's test utilities look for Kueue's source tree when loaded; any directory will do.
  export PROJECT_DIR=$out/kueue/project
  t0=$(now_ms)
  "$kbin/runner" -o "$out/kueue" --generatorConfig "$out/kueue/generator.yaml" --timeout 60m \
    >"$out/kueue/runner.log" 2>&1 || { say "Kueue's runner failed: $(tail -3 "$out/kueue/runner.log")"; exit 1; }
  echo $(($(now_ms) - t0)) >"$out/kueue/wall_ms"
  kcpu=$(awk -v a="$(proc_cpu_s "$kpid")" -v b="$cpu0" 'BEGIN { printf "%.1f", a - b }')
  krss=$(proc_rss_mib "$kpid")
  py kueue-report "$out/kueue" | jq --argjson c "$kcpu" --argjson r "$krss" '. + {cpu_s: $c, rss_mib: $r}' \
    >"$out/kueue.json"
  say "Kueue: $(jq -c '{workloads, wall_ms, admitted_per_s}' "$out/kueue.json")"
  say "Kueue: the owner's reclaim ($rounds rounds) ..."
  t0=$(now_ms)
  "$kbin/runner" -o "$out/kueue-reclaim" --generatorConfig "$out/kueue-reclaim/generator.yaml" \
    --timeout 20m >"$out/kueue-reclaim/runner.log" 2>&1 ||
    { say "Kueue's runner failed: $(tail -3 "$out/kueue-reclaim/runner.log")"; exit 1; }
  echo $(($(now_ms) - t0)) >"$out/kueue-reclaim/wall_ms"
  py kueue-report "$out/kueue-reclaim" >"$out/kueue-reclaim.json"
  kill -INT "$kpid"
  wait "$kpid" 2>/dev/null || true
  kpid=
}

# --- gpuaas ----------------------------------------------------------------------
run_gpuaas() {
  "$build/src/gpuaasd" --listen 127.0.0.1:0 --db "$out/gpuaas/gpuaas.db" --threads 2 \
    --bootstrap-token-file "$out/gpuaas/token" --log-dir "$out/gpuaas/logs" --grace-s "$grace" \
    --kube-sync-s 1 --kube-tolerate kwok.x-k8s.io/node,nvidia.com/gpu --kube-default-image busybox \
    >/dev/null 2>"$out/gpuaas/daemon.log" &
  gpid=$!
  for _ in $(seq 300); do grep -q msg=ready "$out/gpuaas/daemon.log" && break; sleep 0.1; done
  url="http://127.0.0.1:$(grep msg=ready "$out/gpuaas/daemon.log" | sed -E 's/.* port=([0-9]+).*/\1/')"
  token=$(cat "$out/gpuaas/token")
  g=("$build/src/gpuaas" --server "$url" --token "$token")
  "${g[@]}" cluster create k8s --backend kubernetes --endpoint "$KUBECONFIG" >/dev/null
  for _ in $(seq 300); do
    [ "$("${g[@]}" -o json gpu list --limit 1000 | jq '[.items[] | select(.health == "ok")] | length')" = 600 ] && break
    sleep 0.2
  done
  py gpuaas-setup "$url" "$token"
  cpu0=$(proc_cpu_s "$gpid")
  say "gpuaas: the mix (scale $scale) ..."
  py gpuaas-submit "$url" "$token" --scale "$scale" --runtime-ms "$runtime" >"$out/gpuaas/submit.json"
  say "gpuaas: submitted $(cat "$out/gpuaas/submit.json")"
  total=$(jq .submitted "$out/gpuaas/submit.json")
  deadline=$((SECONDS + 3600))
  until [ "$(sqlite3 "file:$out/gpuaas/gpuaas.db?mode=ro" \
    "SELECT count(*) FROM workloads WHERE state IN ('succeeded','failed','cancelled','preempted')")" -ge "$total" ]; do
    [ $SECONDS -lt $deadline ] || { say "gpuaas: the mix did not end within an hour"; exit 1; }
    kill -0 "$gpid" || { say "gpuaasd died: $(tail -3 "$out/gpuaas/daemon.log")"; exit 1; }
    sleep 1
  done
  gcpu=$(awk -v a="$(proc_cpu_s "$gpid")" -v b="$cpu0" 'BEGIN { printf "%.1f", a - b }')
  grss=$(proc_rss_mib "$gpid")
  py gpuaas-report "$out/gpuaas/gpuaas.db" | jq --argjson c "$gcpu" --argjson r "$grss" \
    '. + {cpu_s: $c, rss_mib: $r}' >"$out/gpuaas.json"
  say "gpuaas: $(jq -c '{workloads, wall_ms, admitted_per_s, states}' "$out/gpuaas.json")"
  say "gpuaas: the owner's reclaim ($rounds rounds, grace $grace s) ..."
  py gpuaas-reclaim "$url" "$token" --rounds "$rounds" --grace-s "$grace" >"$out/gpuaas-reclaim.json"
}

[ "$only" = gpuaas ] || run_kueue
[ "$only" = kueue ] || run_gpuaas
[ -n "$only" ] && { cat "$out/$only.json"; exit 0; }

echo "k8s_bench: scale $scale, run times $runtime ms, $(nproc) cores, $(date -u +%Y-%m-%d)"
py table "$out/kueue.json" "$out/gpuaas.json" --kueue-reclaim "$out/kueue-reclaim.json" \
  --gpuaas-reclaim "$out/gpuaas-reclaim.json"
