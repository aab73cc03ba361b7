#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Makes this machine's GPUs usable at once on a fresh gpuaas whose gpuaasd
# reads them (--nvidia-smi, --nvml or --local-gpus): a local cluster, whose
# node and GPUs the daemon discovers, a flavor of one GPU per GPU class found
# (CLASS.1x), and a project 'demo' (organization 'demo') that may use all of
# them. Usage: GPUAAS_SERVER=... GPUAAS_TOKEN=... local-cluster.sh path/to/gpuaas
set -euo pipefail
cli=${1:-gpuaas}
g() { "$cli" "$@"; }

g cluster create local --backend local --description "this machine's GPUs" >/dev/null
# The daemon adds the node and GPUs after its first GPU reading (a few seconds).
n=0
for _ in $(seq 150); do
  n=$(g -o json gpu list | jq '.items | length')
  [ "$n" -gt 0 ] && break
  sleep 0.2
done
if [ "$n" -eq 0 ]; then
  echo "local-cluster.sh: gpuaasd reported no GPU on this machine (see its log)" >&2
  exit 1
fi
g org create demo >/dev/null
g project create demo --org demo >/dev/null
g -o json gpu list | jq -r '.items[].gpu_class_id' | sort | uniq -c | while read -r count id; do
  cls=$(g -o json gpu-class list | jq -r --argjson id "$id" '.items[] | select(.id == $id) | .name')
  g flavor create "$cls.1x" --gpu-class "$cls" --gpu-milli 1000 >/dev/null
  g quota create --project demo --gpu-class "$cls" --limit-milli $((count * 1000)) >/dev/null
  echo "$count x $cls: flavor $cls.1x"
done
