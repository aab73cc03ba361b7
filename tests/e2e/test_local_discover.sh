#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A local cluster finds this machine's GPUs through the nvidia-smi collector,
# here a stand-in that prints what the test writes: the node is named after
# this host, its GPUs come with their UUIDs, indices and normalised class; a
# GPU no longer reported turns down (still listed, given no work) and comes
# back when reported again; work runs on the discovered GPUs. With the fake
# NVML library of the inventory tests, the same through NVML (MIG mode too).
. "$(dirname "$0")/lib.sh"

mkdir -p "$TMP/bin"
cat >"$TMP/bin/nvidia-smi" <<SH
#!/bin/sh
cat "$TMP/smi.csv"
SH
chmod +x "$TMP/bin/nvidia-smi"
U0=GPU-0d15c000-0000-4000-8000-000000000000
U1=GPU-0d15c000-0000-4000-8000-000000000001
row0="0, $U0, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 81559, 0, 0, 31, 70.1, Disabled"
row1="1, $U1, NVIDIA H100 80GB HBM3, 00000000:2A:00.0, 81559, 0, 0, 33, 69.8, Disabled"
printf '%s\n%s\n' "$row0" "$row1" >"$TMP/smi.csv"

PATH="$TMP/bin:$PATH" start_daemon "$TMP/gpuaas.db" --nvidia-smi nvidia-smi \
  --collect-interval-s 1 --log-dir "$TMP/logs" --grace-s 1
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
"${g[@]}" cluster create here --backend local >/dev/null
host=$(hostname)

gpus() { "${g[@]}" -o json gpu list | jq -c '[.items[] | {index, uuid, health}] | sort_by(.index)'; }
wait_gpus() { # expected-json seconds what
  local deadline=$((SECONDS + $2))
  until [ "$(gpus)" = "$1" ]; do
    [ $SECONDS -lt $deadline ] || fail "$3: expected $1, got $(gpus)"
    sleep 0.2
  done
}
both_ok="[{\"index\":0,\"uuid\":\"$U0\",\"health\":\"ok\"},{\"index\":1,\"uuid\":\"$U1\",\"health\":\"ok\"}]"
wait_gpus "$both_ok" 15 "discovered GPUs"
nodes=$("${g[@]}" -o json node list)
expect_eq "$(jq -r '.items | length' <<<"$nodes")" 1 "one node"
expect_eq "$(jq -r '.items[0].name' <<<"$nodes")" "$host" "the node is named after this host"
expect_eq "$(jq -r '.items[0].state' <<<"$nodes")" ready "the node is ready"
classes=$("${g[@]}" -o json gpu-class list)
expect_eq "$(jq -r '[.items[].name] | join(",")' <<<"$classes")" h100 "class from the model name"
expect_eq "$(jq -r '.items[0].model' <<<"$classes")" "NVIDIA H100 80GB HBM3" "the class keeps the model"
row=$("${g[@]}" -o json gpu list | jq -c '.items[0]')
expect_eq "$(jq -r .memory_mib <<<"$row")" 81559 "memory from the collector"
expect_eq "$(jq -r .mig_mode <<<"$row")" false "MIG mode from the collector"
expect_eq "$(jq -r .gpu_class_id <<<"$row")" "$(jq -r '.items[0].id' <<<"$classes")" "class id"

# Work runs on the discovered GPUs, pinned by UUID.
"${g[@]}" flavor create h100.2x --gpu-class h100 --gpu-milli 2000 >/dev/null
"${g[@]}" org create acme >/dev/null
"${g[@]}" project create ml --org acme >/dev/null
"${g[@]}" quota create --project ml --gpu-class h100 --limit-milli 2000 >/dev/null
w=$("${g[@]}" -o json run --project ml --flavor h100.2x -- sh -c 'echo "devices=$CUDA_VISIBLE_DEVICES"' | jq -r .id)
wait_state "$w" succeeded 15
expect_contains "$("${g[@]}" logs "$w")" "devices=$U0,$U1" "work saw the discovered GPUs"

# GPU 1 is no longer reported: down, kept, and given no work.
printf '%s\n' "$row0" >"$TMP/smi.csv"
wait_gpus "[{\"index\":0,\"uuid\":\"$U0\",\"health\":\"ok\"},{\"index\":1,\"uuid\":\"$U1\",\"health\":\"down\"}]" \
  15 "a GPU no longer reported"
expect_eq "$("${g[@]}" -o json inventory | jq -r --arg u "$U1" '.items[] | select(.uuid == $u) | .state')" \
  down "the inventory shows it down"
w=$("${g[@]}" -o json run --project ml --flavor h100.2x -- true | jq -r .id)
sleep 2
expect_eq "$(state_of "$w")" queued "two GPUs asked, one up: the work waits"
# Reported again: up, and the waiting work runs.
printf '%s\n%s\n' "$row0" "$row1" >"$TMP/smi.csv"
wait_gpus "$both_ok" 15 "a GPU reported again"
wait_state "$w" succeeded 15
grep -q 'msg="local GPU no longer reported; marked down"' "$DAEMON_LOG" || fail "no log line for the lost GPU"

# A restart finds the same rows: nothing is added twice.
stop_daemon
PATH="$TMP/bin:$PATH" start_daemon "$TMP/gpuaas.db" --nvidia-smi nvidia-smi \
  --collect-interval-s 1 --log-dir "$TMP/logs"
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
sleep 3
expect_eq "$(gpus)" "$both_ok" "the same GPUs after a restart"
expect_eq "$("${g[@]}" -o json node list | jq '.items | length')" 1 "the same node after a restart"
stop_daemon

# NVML: the inventory tests' fake libnvidia-ml (an H200, and an H100 with MIG on and two
# MIG instances, rows of their own: test_local_mig.sh).
fake=$(dirname "$GPUAASD")/../tests/inventory/fakenvml/libnvidia-ml.so.1
if [ -f "$fake" ]; then
  start_daemon "$TMP/nvml.db" --nvml "$fake" --collect-interval-s 1 --log-dir "$TMP/logs"
  g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
  "${g[@]}" cluster create here --backend local >/dev/null
  deadline=$((SECONDS + 15))
  until [ "$("${g[@]}" -o json gpu list | jq '.items | length')" = 4 ]; do
    [ $SECONDS -lt $deadline ] || fail "no GPUs from NVML"
    sleep 0.2
  done
  declare -A cls
  while read -r id name; do cls[$id]=$name; done < <("${g[@]}" -o json gpu-class list | jq -r '.items[] | "\(.id) \(.name)"')
  list=$("${g[@]}" -o json gpu list | jq -c '.items | sort_by(.index)')
  expect_eq "$(jq -r '.[0].uuid' <<<"$list")" GPU-fa0e0000-0000-4000-8000-000000000000 "NVML uuid"
  expect_eq "${cls[$(jq -r '.[0].gpu_class_id' <<<"$list")]}" h200 "NVML class of GPU 0"
  expect_eq "${cls[$(jq -r '.[1].gpu_class_id' <<<"$list")]}" h100 "NVML class of GPU 1"
  expect_eq "$(jq -r '.[1].mig_mode' <<<"$list")" true "MIG mode from NVML"
  stop_daemon
else
  echo "(no fake NVML at $fake: NVML part skipped)"
fi
echo "local_discover: ok"
