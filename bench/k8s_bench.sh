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
# --kueue-jobs runs Kueue as its users do instead of its harness: Kueue's
# manager (cmd/kueue, batch/Job integration only, out of cluster: no webhook
# is registered with the apiserver, leader election off), kube-scheduler and
# kube-controller-manager's Job controller on the same control plane; the mix
# is submitted as suspended batch/v1 Jobs (the shapes of gpuaas's flavors:
# 1 x 1 GPU, 1 x 5, 2 x 10) that Kueue admits and unsuspends, the Job
# controller makes the pods, kube-scheduler binds them, kwok runs them. The
# reclaim is then gpuaas's scenario with Jobs, measured to the owner's pods
# Running. --kueue-qps sets the manager's client QPS (burst twice that;
# default 50, as Kueue's shipped configuration and minimalkueue).
#
# usage: bench/k8s_bench.sh [--scale S] [--runtime-ms A,B,C] [--rounds R] [--grace-s G]
#                           [--only kueue|gpuaas] [--kueue-jobs [--kueue-qps Q]]
#   --scale 1 is Kueue's baseline (15,000 workloads); 0.2 is a quick run.
#   --runtime-ms: small,medium,large run times (default 1000,1000,1000: Kueue's
#   200/500/1000 ms rounded up to gpuaas's whole seconds, for both sides).
# Prints the table for docs/benchmarks.md; everything stays in the printed
# directory (logs, the runner's CSVs, the gpuaas store, JSON summaries).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
scale=1 runtime=1000,1000,1000 rounds=5 grace=1 only='' kjobs='' kqps=50
while [ $# -gt 0 ]; do
  case $1 in
  --scale) scale=$2 ;;
  --runtime-ms) runtime=$2 ;;
  --rounds) rounds=$2 ;;
  --grace-s) grace=$2 ;;
  --only) only=$2 ;;
  --kueue-jobs) kjobs=1; shift; continue ;;
  --kueue-qps) kqps=$2 ;;
  *) echo "usage: $0 [--scale S] [--runtime-ms A,B,C] [--rounds R] [--grace-s G] [--only kueue|gpuaas] [--kueue-jobs [--kueue-qps Q]]" >&2; exit 2 ;;
  esac
  shift 2
done
say() { echo "k8s_bench: $*" >&2; }
py() { python3 "$src/bench/k8s_bench.py" "$@"; }
build=${BENCH_BUILD:-build}
bash scripts/build.sh "$build" >/dev/null
tests/k8s/build.sh >/dev/null
kq=
[ "$only" = gpuaas ] || kq=$(tests/k8s/build-kueue.sh ${kjobs:+--jobs})
kbin=$(sed -n 's/^kueue-build: bin=\([^ ]*\) .*/\1/p' <<<"$kq")
crds=$(sed -n 's/.* crds=\([^ ]*\) .*/\1/p' <<<"$kq")

out=$(mktemp -d /tmp/gpuaas-k8s-bench.XXXXXX)
mkdir -p "$out/kueue" "$out/kueue-reclaim" "$out/gpuaas"
kpid='' gpid='' wpid=''
cleanup() {
  [ -n "$kpid" ] && kill -INT "$kpid" 2>/dev/null && wait "$kpid" 2>/dev/null
  [ -n "$wpid" ] && kill -TERM "$wpid" 2>/dev/null && wait "$wpid" 2>/dev/null
  [ -z "$kjobs" ] || cp -r "$out/k8s/log" "$out/k8s-log" 2>/dev/null # down.sh removes DIR
  [ -n "$gpid" ] && kill -TERM "$gpid" 2>/dev/null && wait "$gpid" 2>/dev/null
  tests/k8s/down.sh "$out/k8s" 2>/dev/null || true
  say "results and logs in $out"
}
trap cleanup EXIT

echo "gpu10 $((5 * 6 * 2)) 10 NVIDIA-H100-80GB-HBM3 81559 -" >"$out/nodes"
start=$(date +%s)
if [ -n "$kjobs" ]; then
  # Kueue's Jobs need the Job controller. The client limits of
  # kube-controller-manager (default 20 QPS) and kube-scheduler (50) are raised
  # so that the stock controllers beside Kueue are not what bounds its side.
  export GPUAAS_K8S_KCM_CONTROLLERS=serviceaccount,serviceaccount-token,namespace,garbagecollector,job
  export GPUAAS_K8S_KCM_ARGS="--kube-api-qps 500 --kube-api-burst 1000"
fi
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
apply_kueue_crds() {
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
}
run_kueue() {
  apply_kueue_crds
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
  # The mix's runner deletes its objects as it ends; its ResourceFlavor goes last, once
  # every workload is gone (at scale 1, minutes). The reclaim's runner makes one of the
  # same name: wait until it is gone.
  for _ in $(seq 600); do
    [ "$(kapi -o /dev/null -w '%{http_code}' \
      "$K8S_SERVER/apis/kueue.x-k8s.io/v1beta2/resourceflavors/rf")" = 404 ] && break
    sleep 1
  done
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

# --- Kueue with real Jobs (--kueue-jobs) ---------------------------------------------
# The manager and kube-scheduler run like the control plane's processes: in a
# session of their own, pid in DIR/run (down.sh stops them), log in DIR/log.
cp_start() { # name command...
  local name=$1
  shift
  setsid "$@" </dev/null >"$K8S_DIR/log/$name.log" 2>&1 &
  echo $! >"$K8S_DIR/run/$name.pid"
}
cp_pid() { cat "$K8S_DIR/run/$1.pid"; }
cp_stop() { # name: TERM, KILL after 10 s
  local pid
  pid=$(cp_pid "$1" 2>/dev/null) || return 0
  if kill -TERM "$pid" 2>/dev/null; then
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$K8S_DIR/run/$1.pid"
}
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# CPU seconds of control plane processes now, as a JSON object.
cp_cpu_json() {
  local n
  for n in "$@"; do echo "$n $(proc_cpu_s "$(cp_pid "$n")")"; done |
    jq -Rn '[inputs | split(" ") | {(.[0]): (.[1] | tonumber)}] | add'
}
cp_names=(kube-scheduler kube-controller-manager kube-apiserver etcd kwok)
cp_cpu_delta() { # before.json after.json
  jq -n --slurpfile a "$1" --slurpfile b "$2" \
    '$b[0] | with_entries(.value = (((.value - $a[0][.key]) * 10 | round) / 10))'
}

run_kueue_jobs() {
  export K8S_SERVER K8S_CA K8S_TOKEN # for bench/k8s_bench.py's client
  apply_kueue_crds
  local kd=$K8S_DIR/kueue hport wport
  mkdir -p "$kd/certs" "$kd/etc/kueue/metrics/certs" "$kd/overlay-work"
  # The webhook server's certificate (nothing calls it: no webhook
  # configuration is registered) and the metrics server's, which Kueue reads
  # from the fixed path /etc/kueue/metrics/certs when internalCertManagement
  # is off, even with metrics off: in a mount namespace of the manager's own,
  # $kd/etc is laid over /etc (overlayfs), so nothing on the machine changes.
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 -keyout "$kd/certs/tls.key" -out "$kd/certs/tls.crt" 2>/dev/null
  cp "$kd/certs/tls.crt" "$kd/certs/tls.key" "$kd/etc/kueue/metrics/certs/"
  hport=$(free_port)
  wport=$(free_port)
  # Kueue's shipped manager configuration (config/components/manager), out of
  # cluster: batch/Job only, no leader election, no cert management, metrics
  # and the visibility server off, health and webhook servers on 127.0.0.1.
  cat >"$kd/config.yaml" <<END
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health:
  healthProbeBindAddress: 127.0.0.1:$hport
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: $wport
  certDir: $kd/certs
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
controller:
  groupKindConcurrency:
    Job.batch: 5
    Pod: 5
    Workload.kueue.x-k8s.io: 5
    LocalQueue.kueue.x-k8s.io: 1
    Cohort.kueue.x-k8s.io: 1
    ClusterQueue.kueue.x-k8s.io: 1
    ResourceFlavor.kueue.x-k8s.io: 1
clientConnection:
  qps: $kqps
  burst: $((2 * kqps))
manageJobsWithoutQueueName: false
integrations:
  frameworks:
  - batch/job
featureGates:
  VisibilityOnDemand: false
END
  cat >"$kd/kube-scheduler.yaml" <<END
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: $KUBECONFIG
  qps: 500
  burst: 1000
leaderElection:
  leaderElect: false
END
  cp_start kube-scheduler "$kbin/kube-scheduler" --config "$kd/kube-scheduler.yaml" \
    --secure-port 0 --profiling=false --v 1
  local ns=(unshare --mount --propagation private)
  [ "$(id -u)" = 0 ] || ns=(unshare --user --map-root-user --mount --propagation private)
  # shellcheck disable=SC2016 # expanded by the inner shell
  cp_start kueue "${ns[@]}" -- sh -c 'mount -t overlay overlay \
    -o "lowerdir=/etc,upperdir=$1/etc,workdir=$1/overlay-work" /etc && exec "$2" --config "$1/config.yaml"' \
    sh "$kd" "$kbin/kueue"
  for _ in $(seq 300); do
    [ "$(curl -s "http://127.0.0.1:$hport/readyz" 2>/dev/null)" = ok ] && break
    kill -0 "$(cp_pid kueue)" 2>/dev/null ||
      { say "Kueue's manager exited: $(tail -3 "$K8S_DIR/log/kueue.log")"; exit 1; }
    sleep 0.2
  done
  kill -0 "$(cp_pid kube-scheduler)" 2>/dev/null ||
    { say "kube-scheduler exited: $(tail -3 "$K8S_DIR/log/kube-scheduler.log")"; exit 1; }
  local n kp cpu0
  n=$(py kueue-jobs-setup --scale "$scale" | jq .jobs)
  say "Kueue (manager, batch/Job): the mix (scale $scale, $n Jobs) ..."
  kp=$(cp_pid kueue)
  cpu0=$(proc_cpu_s "$kp")
  cp_cpu_json "${cp_names[@]}" >"$out/kueue/cp0.json"
  py kube-requests "$out/kueue/requests0.json"
  py kueue-jobs-watch "$out/kueue" --expect "$n" --timeout-s 3600 >"$out/kueue/watch.log" 2>&1 &
  wpid=$!
  for _ in $(seq 600); do [ -e "$out/kueue/watch.ready" ] && break; sleep 0.1; done
  py kueue-jobs-submit "$out/kueue" --scale "$scale" --runtime-ms "$runtime" >"$out/kueue/submitted.json"
  say "Kueue: submitted $(cat "$out/kueue/submitted.json")"
  wait "$wpid" || { wpid=; say "Kueue: $(tail -1 "$out/kueue/watch.log")"; exit 1; }
  wpid=
  cp_cpu_json "${cp_names[@]}" >"$out/kueue/cp1.json"
  py kube-requests "$out/kueue/requests1.json" --since "$out/kueue/requests0.json" >"$out/kueue/requests.json"
  kcpu=$(awk -v a="$(proc_cpu_s "$kp")" -v b="$cpu0" 'BEGIN { printf "%.1f", a - b }')
  krss=$(proc_rss_mib "$kp")
  py kueue-jobs-report "$out/kueue" | jq --argjson c "$kcpu" --argjson r "$krss" \
    --argjson cp "$(cp_cpu_delta "$out/kueue/cp0.json" "$out/kueue/cp1.json")" \
    --argjson qps "$kqps" --slurpfile s "$out/kueue/submitted.json" --slurpfile q "$out/kueue/requests.json" \
    '. + {cpu_s: $c, rss_mib: $r, cp_cpu_s: $cp, kueue_qps: $qps, submit: $s[0],
    apiserver_requests: $q[0].total}' >"$out/kueue.json"
  say "Kueue: $(jq -c '{workloads, wall_ms, admitted_per_s, finished, evictions}' "$out/kueue.json")"
  say "Kueue: the owner's reclaim with Jobs ($rounds rounds, grace $grace s) ..."
  py kueue-jobs-reclaim --rounds "$rounds" --grace-s "$grace" >"$out/kueue-reclaim.json" ||
    { say "Kueue's reclaim failed"; exit 1; }
  say "Kueue: reclaim $(jq -c . "$out/kueue-reclaim.json")"
  # As the runner does, leave the control plane empty for gpuaas.
  py kube-cleanup --timeout-s 300 || say "Kueue's namespaces are not all gone; going on"
  cp_stop kueue
  cp_stop kube-scheduler
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
  if [ -n "$kjobs" ]; then
    export K8S_SERVER K8S_CA K8S_TOKEN
    cp_cpu_json "${cp_names[@]:1}" >"$out/gpuaas/cp0.json"
    py kube-requests "$out/gpuaas/requests0.json"
  fi
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
  if [ -n "$kjobs" ]; then
    cp_cpu_json "${cp_names[@]:1}" >"$out/gpuaas/cp1.json"
    py kube-requests "$out/gpuaas/requests1.json" --since "$out/gpuaas/requests0.json" >"$out/gpuaas/requests.json"
    jq --argjson cp "$(cp_cpu_delta "$out/gpuaas/cp0.json" "$out/gpuaas/cp1.json")" \
      --slurpfile q "$out/gpuaas/requests.json" \
      '. + {cp_cpu_s: $cp, apiserver_requests: $q[0].total}' "$out/gpuaas.json" >"$out/gpuaas.json.tmp"
    mv "$out/gpuaas.json.tmp" "$out/gpuaas.json"
  fi
  say "gpuaas: $(jq -c '{workloads, wall_ms, admitted_per_s, states}' "$out/gpuaas.json")"
  say "gpuaas: the owner's reclaim ($rounds rounds, grace $grace s) ..."
  py gpuaas-reclaim "$url" "$token" --rounds "$rounds" --grace-s "$grace" >"$out/gpuaas-reclaim.json"
}

if [ "$only" != gpuaas ]; then
  if [ -n "$kjobs" ]; then run_kueue_jobs; else run_kueue; fi
fi
[ "$only" = kueue ] || run_gpuaas
[ -n "$only" ] && { cat "$out/$only.json"; exit 0; }

echo "k8s_bench: scale $scale, run times $runtime ms, $(nproc) cores, $(date -u +%Y-%m-%d)${kjobs:+, Kueue with Jobs (its client QPS $kqps)}"

py table "$out/kueue.json" "$out/gpuaas.json" --kueue-reclaim "$out/kueue-reclaim.json" \
  --gpuaas-reclaim "$out/gpuaas-reclaim.json"
