#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The local backend end to end: a cluster of this machine with two declared
# GPUs (the test machine has none); work really runs as processes that see
# exactly their devices, writes logs readable through the CLI, reports its
# exit code, and is stopped with a grace period when cancelled.
. "$(dirname "$0")/lib.sh"

start_daemon "$TMP/gpuaas.db" --log-dir "$TMP/logs" --grace-s 1
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
"${g[@]}" cluster create here --backend local >/dev/null
"${g[@]}" gpu-class create h100 >/dev/null
"${g[@]}" node create this-host --cluster here >/dev/null
"${g[@]}" gpu create --node this-host --index 0 --gpu-class h100 --uuid GPU-aaaa >/dev/null
"${g[@]}" gpu create --node this-host --index 1 --gpu-class h100 --uuid GPU-bbbb >/dev/null
"${g[@]}" flavor create h100.1x --gpu-class h100 --gpu-milli 1000 >/dev/null
"${g[@]}" flavor create h100.2x --gpu-class h100 --gpu-milli 2000 >/dev/null
"${g[@]}" org create acme >/dev/null
"${g[@]}" project create ml --org acme >/dev/null
"${g[@]}" quota create --project ml --gpu-class h100 --limit-milli 2000 >/dev/null

w=$("${g[@]}" -o json run --project ml --flavor h100.2x -- sh -c \
  'echo "devices=$CUDA_VISIBLE_DEVICES nvidia=$NVIDIA_VISIBLE_DEVICES"; echo oops >&2; exit 3' | jq -r .id)
wait_state "$w" failed 10
api GET "/v1/workloads/$w" "$ADMIN_TOKEN"
expect_eq "$(jq -r .exit_code <<<"$BODY")" 3 "exit code"
logs=$("${g[@]}" logs "$w")
expect_contains "$logs" "devices=GPU-aaaa,GPU-bbbb nvidia=GPU-aaaa,GPU-bbbb" "the process saw its devices"
expect_contains "$logs" "oops" "stderr captured"

ok=$("${g[@]}" -o json run --project ml --flavor h100.1x -- sh -c 'echo hello; exit 0' | jq -r .id)
wait_state "$ok" succeeded 10
expect_eq "$("${g[@]}" logs "$ok" -f)" hello "logs -f of finished work"

# The flavor's CPU and memory limits, read by the work from its own cgroup, where this
# machine lets gpuaasd manage cgroups (as root; v1's cpu and memory, or v2).
if grep -q "runs work in cgroups" "$DAEMON_LOG"; then
  cat >"$TMP/limits.sh" <<'PROBE'
m=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3 }' /proc/self/cgroup)
c=$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ { print $3 }' /proc/self/cgroup)
if [ -n "$m" ]; then
  echo "cgroup=$m mem=$(cat "/sys/fs/cgroup/memory$m/memory.limit_in_bytes") cpu=$(cat "/sys/fs/cgroup/cpu$c/cpu.cfs_quota_us")"
else
  p=$(sed -n 's/^0:://p' /proc/self/cgroup)
  echo "cgroup=$p mem=$(cat "/sys/fs/cgroup$p/memory.max") cpu=$(cut -d' ' -f1 "/sys/fs/cgroup$p/cpu.max")"
fi
PROBE
  "${g[@]}" flavor create h100.lim --gpu-class h100 --gpu-milli 1000 --vcpus 2 --memory-mib 200 >/dev/null
  lim=$("${g[@]}" -o json run --project ml --flavor h100.lim -- sh "$TMP/limits.sh" | jq -r .id)
  wait_state "$lim" succeeded 10
  logs=$("${g[@]}" logs "$lim")
  expect_contains "$logs" "mem=209715200 cpu=200000" "the flavor's limits in the work's cgroup"
  [[ "$logs" =~ cgroup=/gpuaas/gpuaas-[0-9a-f]{8}-$lim-0\  ]] || fail "not in its own cgroup: $logs"
else
  echo "cgroup limits not checked: $(grep -o 'without cgroup limits.*' "$DAEMON_LOG")"
fi

# Cancelling running work: TERM to its process group, then KILL after the 1 s grace for
# whatever ignores TERM (here the inner shell and its sleep).
# (sleep 60.<our pid>: a command line no other process on the machine has)
stuck=$("${g[@]}" -o json run --project ml --flavor h100.1x -- sh -c "trap '' TERM; echo started; sleep 60.$$" | jq -r .id)
wait_state "$stuck" running 10
sleep 0.5
"${g[@]}" cancel "$stuck" >/dev/null
wait_state "$stuck" cancelled 10
api GET "/v1/workloads/$stuck" "$ADMIN_TOKEN"
[ "$(jq -r .exit_code <<<"$BODY")" -lt 0 ] || fail "cancelled work should end by a signal: $BODY"
sleep 1.5
pgrep -f "sleep 60\.$$" >/dev/null && fail "a process of the cancelled work is still running"
stop_daemon
echo "local: ok"
