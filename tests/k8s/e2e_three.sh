#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# k8s.e2e_three_backends: one project's quota over three kinds of cluster at
# once, through the daemon and the CLI (issue 16's multi-cluster case): this
# host through the local backend (its GPUs from a stand-in nvidia-smi), the
# real Slurm of with-slurm.sh and the real kube-apiserver with kwok's nodes
# of with-k8s.sh, all h100.
#  - each cluster's nodes and GPUs are discovered into the one h100 class;
#  - work pinned to each cluster (flavors with a node selector) runs there:
#    a process here, a Slurm job, a pod;
#  - the project's limit of 3 GPUs counts all three: a fourth waits at its
#    limit although every cluster has room, and starts (in another cluster)
#    once one ends;
#  - one timeline names each allocation's cluster and node;
#  - every run is billed once, the ledger verifies, and the daemon lives.
. "${GPUAAS_SOURCE_DIR:?}/tests/e2e/lib.sh"
: "${SLURM_CONF:?run through tests/slurm/with-slurm.sh}"
: "${KUBECONFIG:?run through tests/k8s/with-k8s.sh}"

# This host's two GPUs, as nvidia-smi would print them.
mkdir -p "$TMP/bin"
printf '%s\n' "0, GPU-3b000000-0000-4000-8000-000000000000, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 81559, 0, 0, 31, 70.1, Disabled" \
  "1, GPU-3b000000-0000-4000-8000-000000000001, NVIDIA H100 80GB HBM3, 00000000:2A:00.0, 81559, 0, 0, 33, 69.8, Disabled" \
  >"$TMP/smi.csv"
printf '#!/bin/sh\ncat "%s"\n' "$TMP/smi.csv" >"$TMP/bin/nvidia-smi"
chmod +x "$TMP/bin/nvidia-smi"

PATH="$TMP/bin:$PATH" start_daemon "$TMP/gpuaas.db" --nvidia-smi nvidia-smi --collect-interval-s 1 \
  --log-dir "$TMP/logs" --grace-s 1 --slurm-sync-s 1 --kube-sync-s 1 \
  --kube-tolerate kwok.x-k8s.io/node,nvidia.com/gpu --kube-default-image busybox
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
host=$(hostname)

"${g[@]}" gpu-class create h100 >/dev/null
"${g[@]}" cluster create here --backend local >/dev/null
"${g[@]}" cluster create sl --backend slurm --endpoint "$SLURM_CONF" >/dev/null
"${g[@]}" cluster create k8s --backend kubernetes --endpoint "$KUBECONFIG" >/dev/null

db() { sqlite3 "file:$TMP/gpuaas.db?mode=ro" "$1" | tr '\n' ' ' | sed 's/ $//'; }
# The healthy h100 GPUs per cluster, as the store has them: "here|2 k8s|16 sl|8".
per_cluster() {
  db "SELECT c.name, count(*) FROM gpus g JOIN nodes n ON n.id = g.node_id
      JOIN clusters c ON c.id = n.cluster_id JOIN gpu_classes k ON k.id = g.gpu_class_id
      WHERE k.name = 'h100' AND g.health = 'ok' GROUP BY c.name ORDER BY c.name"
}
deadline=$((SECONDS + 60))
until [ "$(per_cluster)" = "here|2 k8s|16 sl|8" ]; do
  [ $SECONDS -lt $deadline ] || fail "the three clusters' h100s did not appear: $(per_cluster)"
  sleep 0.5
done

# A label per cluster on its nodes, and a one-GPU flavor pinned to each.
for c in here sl k8s; do
  for n in $(db "SELECT n.name FROM nodes n JOIN clusters c ON c.id = n.cluster_id WHERE c.name = '$c'"); do
    "${g[@]}" node update "$c/$n" --labels "site=$c" >/dev/null || fail "labelling $c/$n"
  done
  "${g[@]}" flavor create "h100.1x-$c" --gpu-class h100 --gpu-milli 1000 --vcpus 1 --memory-mib 256 \
    --node-selector "site=$c" >/dev/null
done
"${g[@]}" org create acme >/dev/null
"${g[@]}" project create owners --org acme >/dev/null
"${g[@]}" quota create --project owners --gpu-class h100 --limit-milli 3000 >/dev/null

run_on() { # CLUSTER COMMAND...: the new workload's id
  local c=$1
  shift
  "${g[@]}" -o json run --project owners --flavor "h100.1x-$c" -- "$@" | jq -r .id
}
w_here=$(run_on here sleep 600)
w_sl=$(run_on sl sleep 600)
w_k8s=$(run_on k8s sleep 600)
for w in "$w_here" "$w_sl" "$w_k8s"; do wait_state "$w" running 30; done
where() { # WORKLOAD: "cluster/node" of its open allocation
  db "SELECT c.name || '/' || n.name FROM allocations a JOIN nodes n ON n.id = a.node_id
      JOIN clusters c ON c.id = n.cluster_id WHERE a.workload_id = $1 AND a.ended_ms IS NULL"
}
expect_eq "$(where "$w_here")" "here/$host" "the local work runs on this host"
expect_contains "$(where "$w_sl")" "sl/node" "the Slurm work on a Slurm node"
expect_contains "$(where "$w_k8s")" "k8s/kwok-h100-" "the pod on a kwok node"
[ -n "$(squeue -h -o %i)" ] || fail "no Slurm job runs"
pods=$(curl -sS --cacert "$K8S_CA" -H "Authorization: Bearer $K8S_TOKEN" \
  "$K8S_SERVER/api/v1/pods?labelSelector=gpuaas.io%2Fworkload%3D$w_k8s" | jq '.items | length')
expect_eq "$pods" 1 "one pod of the Kubernetes work"

# The fourth GPU is over the project's limit, though every cluster has room (a pod
# of 2 s: on Slurm it would be queued ahead behind the project's own job instead).
over=$("${g[@]}" -o json run --project owners --flavor h100.1x-k8s --duration 2s -- work | jq -r .id)
sleep 2
api GET "/v1/workloads/$over" "$ADMIN_TOKEN"
expect_eq "$(jq -r .state <<<"$BODY")" queued "the fourth GPU waits"
expect_contains "$(jq -r .reason <<<"$BODY")" "project at its limit 3/3" "one limit over three clusters"
tl=$("${g[@]}" timeline --project owners --since 10m)
expect_contains "$tl" "here/$host" "the timeline names this host"
expect_contains "$tl" "sl/node" "the Slurm node"
expect_contains "$tl" "k8s/kwok-h100-" "and the kwok node"

# One ends (the process here): the fourth starts, as a pod, and succeeds.
"${g[@]}" cancel "$w_here" >/dev/null
wait_state "$w_here" cancelled 30
wait_state "$over" succeeded 60
"${g[@]}" cancel "$w_sl" "$w_k8s" >/dev/null
for w in "$w_sl" "$w_k8s"; do wait_state "$w" cancelled 30; done

expect_eq "$(db "SELECT count(*) FROM allocations WHERE ended_ms IS NULL")" 0 "open allocations"
for w in "$w_here" "$w_sl" "$w_k8s" "$over"; do
  expect_eq "$(db "SELECT count(*) FROM usage_records WHERE workload_id = $w")" 1 \
    "one usage record of workload $w"
done
out=$("${g[@]}" usage verify) || fail "usage verify: $out"
expect_contains "$out" "ledger ok" "the usage ledger"
stop_daemon
echo "k8s.e2e_three_backends: ok"
