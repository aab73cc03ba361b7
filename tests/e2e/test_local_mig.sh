#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# MIG on a local cluster, through a stand-in nvidia-smi: a GPU with MIG
# instances is scheduled as its instances (rows of their own, class
# "<class>/<profile>", their MIG-... UUIDs, indices 100 x (GPU + 1) + N),
# its own row stays but turns health "mig" (not scheduled, state "mig" in
# the inventory); work of a MIG flavor sees CUDA_VISIBLE_DEVICES=MIG-...;
# without instances the instances go down and the whole GPU is back. With
# the fake NVML library, the same instance rows through NVML.
. "$(dirname "$0")/lib.sh"

mkdir -p "$TMP/bin"
cat >"$TMP/bin/nvidia-smi" <<SH
#!/bin/sh
if [ "\$1" = -L ]; then cat "$TMP/smi.list"; else cat "$TMP/smi.csv"; fi
SH
chmod +x "$TMP/bin/nvidia-smi"
U0=GPU-0d15c000-0000-4000-8000-000000000000
U1=GPU-0d15c000-0000-4000-8000-000000000001
M1=MIG-0d15c000-0000-4000-8000-00000000b001
M2=MIG-0d15c000-0000-4000-8000-00000000b002
row0="0, $U0, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 81559, 0, 0, 31, 70.1, Disabled"
mig1="1, $U1, NVIDIA H100 80GB HBM3, 00000000:2A:00.0, 81559, 0, [N/A], 33, 69.8, Enabled"
whole1="1, $U1, NVIDIA H100 80GB HBM3, 00000000:2A:00.0, 81559, 0, 0, 33, 69.8, Disabled"
printf '%s\n%s\n' "$row0" "$mig1" >"$TMP/smi.csv"
cat >"$TMP/smi.list" <<L
GPU 0: NVIDIA H100 80GB HBM3 (UUID: $U0)
GPU 1: NVIDIA H100 80GB HBM3 (UUID: $U1)
  MIG 1g.10gb     Device  0: (UUID: $M1)
  MIG 1g.10gb     Device  1: (UUID: $M2)
L

PATH="$TMP/bin:$PATH" start_daemon "$TMP/gpuaas.db" --nvidia-smi nvidia-smi \
  --collect-interval-s 1 --log-dir "$TMP/logs" --grace-s 1
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
"${g[@]}" cluster create here --backend local >/dev/null

gpus() { "${g[@]}" -o json gpu list | jq -c '[.items[] | {index, uuid, health}] | sort_by(.index)'; }
wait_gpus() { # expected-json seconds what
  local deadline=$((SECONDS + $2))
  until [ "$(gpus)" = "$1" ]; do
    [ $SECONDS -lt $deadline ] || fail "$3: expected $1, got $(gpus)"
    sleep 0.2
  done
}
row() { printf '{"index":%d,"uuid":"%s","health":"%s"}' "$1" "$2" "$3"; }
split="[$(row 0 $U0 ok),$(row 1 $U1 mig),$(row 200 $M1 ok),$(row 201 $M2 ok)]"
wait_gpus "$split" 15 "MIG instances as rows"
declare -A cls
while read -r id name; do cls[$id]=$name; done < <("${g[@]}" -o json gpu-class list | jq -r '.items[] | "\(.id) \(.name)"')
list=$("${g[@]}" -o json gpu list | jq -c '.items | sort_by(.index)')
expect_eq "${cls[$(jq -r '.[2].gpu_class_id' <<<"$list")]}" "h100/1g.10gb" "the MIG class"
expect_eq "${cls[$(jq -r '.[1].gpu_class_id' <<<"$list")]}" "h100" "the parent keeps its class"
expect_eq "$(jq -r '.[2].memory_mib' <<<"$list")" 10240 "the instance's memory"
expect_eq "$(jq -r '.[2].mig_mode' <<<"$list")" true "an instance is MIG"
expect_eq "$(jq -r '.[2].node_id' <<<"$list")" "$(jq -r '.[0].node_id' <<<"$list")" "same node"
expect_contains "$("${g[@]}" gpu list)" "mig" "gpu list shows the parent's health"
expect_eq "$("${g[@]}" -o json inventory | jq -r --arg u "$U1" '.items[] | select(.uuid == $u) | .state')" \
  mig "the inventory shows the parent split"

"${g[@]}" org create acme >/dev/null
"${g[@]}" project create ml --org acme >/dev/null
"${g[@]}" flavor create mig.1g --gpu-class h100/1g.10gb --gpu-milli 1000 >/dev/null
"${g[@]}" flavor create h100.2x --gpu-class h100 --gpu-milli 2000 >/dev/null
"${g[@]}" quota create --project ml --gpu-class h100/1g.10gb --limit-milli 2000 >/dev/null
"${g[@]}" quota create --project ml --gpu-class h100 --limit-milli 2000 >/dev/null
# The split GPU is not offered whole: two whole H100s wait.
w2=$("${g[@]}" -o json run --project ml --flavor h100.2x -- sh -c 'echo "devices=$CUDA_VISIBLE_DEVICES"' | jq -r .id)
# A MIG flavor runs on an instance, pinned by its MIG UUID.
w=$("${g[@]}" -o json run --project ml --flavor mig.1g -- sh -c 'echo "devices=$CUDA_VISIBLE_DEVICES nv=$NVIDIA_VISIBLE_DEVICES"' | jq -r .id)
wait_state "$w" succeeded 15
log=$("${g[@]}" logs "$w")
case "$log" in
*"devices=$M1 nv=$M1"* | *"devices=$M2 nv=$M2"*) ;;
*) fail "MIG work saw: $log" ;;
esac
sleep 2
expect_eq "$(state_of "$w2")" queued "the split GPU is not scheduled whole"

# MIG turned off: the instances go down (kept), the parent is whole again.
printf '%s\n%s\n' "$row0" "$whole1" >"$TMP/smi.csv"
wait_gpus "[$(row 0 $U0 ok),$(row 1 $U1 ok),$(row 200 $M1 down),$(row 201 $M2 down)]" 15 "MIG off"
wait_state "$w2" succeeded 15
expect_contains "$("${g[@]}" logs "$w2")" "devices=$U0,$U1" "the whole GPU runs work again"
grep -q 'msg="local GPU has no MIG instances; scheduled whole again"' "$DAEMON_LOG" ||
  fail "no log line for the whole GPU"
# On again: the same rows come back.
printf '%s\n%s\n' "$row0" "$mig1" >"$TMP/smi.csv"
wait_gpus "$split" 15 "MIG on again"
grep -q 'msg="local GPU split into MIG instances' "$DAEMON_LOG" || fail "no log line for the split"
stop_daemon

# NVML: the fake library's H100 has MIG on with GPU instances 1 and 2.
fake=$(dirname "$GPUAASD")/../tests/inventory/fakenvml/libnvidia-ml.so.1
if [ -f "$fake" ]; then
  start_daemon "$TMP/nvml.db" --nvml "$fake" --collect-interval-s 1 --log-dir "$TMP/logs"
  g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
  "${g[@]}" cluster create here --backend local >/dev/null
  wait_gpus "[$(row 0 GPU-fa0e0000-0000-4000-8000-000000000000 ok),$(row 1 GPU-fa0e0000-0000-4000-8000-000000000001 mig),$(row 201 MIG-fa0e0000-0000-4000-8000-00000000a001 ok),$(row 202 MIG-fa0e0000-0000-4000-8000-00000000a002 ok)]" \
    15 "MIG instances from NVML"
  names=$("${g[@]}" -o json gpu-class list | jq -r '[.items[].name] | sort | join(",")')
  expect_eq "$names" "h100,h100/1g.10gb,h100/3g.40gb,h200" "NVML classes"
  stop_daemon
else
  echo "(no fake NVML at $fake: NVML part skipped)"
fi
echo "local_mig: ok"
