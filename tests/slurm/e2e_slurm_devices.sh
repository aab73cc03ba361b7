#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Slurm's device indices reconciled with gpuaas' allocations (issue 8:
# "CUDA_VISIBLE_DEVICES seen by the process equals the allocation"), on a
# one-node Slurm (8 GPUs) that with-slurm.sh stood up. A job submitted to
# Slurm behind gpuaas' back holds GPU index 0, which gpuaas believes free;
# gpuaas then runs 1-GPU work there and records the GPU its scheduler picked,
# while Slurm gives the job another. Within a few seconds the work's open
# allocation names the GPU whose index the job printed, with a "devices"
# event, and the closed allocation keeps it.
. "${GPUAAS_SOURCE_DIR:?}/tests/e2e/lib.sh"
: "${SLURM_CONF:?run through tests/slurm/with-slurm.sh}"

# Slurm's foreign job first, so gpuaas' job cannot take index 0 (with-slurm.sh's
# teardown ends it should the test fail).
foreign=$(sbatch --parsable --nodelist=node1 --gres=gpu:h100:1 --mem=100M --job-name=foreign \
  --output=/dev/null --wrap 'sleep 120')
deadline=$((SECONDS + 20))
until [ "$(squeue -h -j "$foreign" -o %T)" = RUNNING ]; do
  [ $SECONDS -lt $deadline ] || fail "the foreign job never ran: $(squeue -h -j "$foreign" -o '%T %r')"
  sleep 0.2
done
expect_contains "$(scontrol -d -o show job "$foreign")" "GRES=gpu:h100:1(IDX:0)" "the foreign job's GPU"

start_daemon "$TMP/gpuaas.db" --log-dir "$TMP/logs" --slurm-sync-s 1
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
slurm_cluster 8
"${g[@]}" flavor create h100.1x --gpu-class h100 --gpu-milli 1000 --vcpus 1 --memory-mib 256 >/dev/null
"${g[@]}" org create acme >/dev/null
"${g[@]}" project create owners --org acme >/dev/null
"${g[@]}" pool create sl-h100 --owner-project owners --cluster sl >/dev/null
"${g[@]}" quota create --project owners --gpu-class h100 --limit-milli 8000 >/dev/null

# The index of the GPU a workload's allocation names (open ones only with "open").
alloc_index() {
  local q="/v1/allocations?workload_id=$1"
  api GET "$q" "$ADMIN_TOKEN"
  local gid
  gid=$(jq -r --arg open "${2:-}" '[.items[] | select($open == "" or .ended_ms == null)] |
    if length == 1 then .[0].gpu_id else "none" end' <<<"$BODY")
  [ "$gid" != none ] || { echo none; return; }
  api GET "/v1/gpus/$gid" "$ADMIN_TOKEN"
  jq -r .index <<<"$BODY"
}

w=$("${g[@]}" -o json run --project owners --flavor h100.1x --owned -- sh -c \
  'echo "devices=$CUDA_VISIBLE_DEVICES"; sleep 6' | jq -r .id)
wait_state "$w" running 30
first=$(alloc_index "$w" open)
for _ in $(seq 100); do
  grep -q devices= "$TMP/logs/$w.log" 2>/dev/null && break
  sleep 0.1
done
seen=$(sed -n 's/^devices=//p' "$TMP/logs/$w.log")
[ -n "$seen" ] || fail "the job printed no devices: $(cat "$TMP/logs/$w.log" 2>/dev/null)"
[ "$seen" != 0 ] || fail "Slurm gave the job GPU 0, which its foreign job holds"
[ "$first" != "$seen" ] ||
  fail "gpuaas recorded GPU $first, which Slurm gave: no mismatch to reconcile (the test needs one)"

# Reconciled while the job runs (it has run 1 s, the next squeue after).
deadline=$((SECONDS + 5))
until [ "$(alloc_index "$w" open)" = "$seen" ]; do
  [ $SECONDS -lt $deadline ] ||
    fail "the open allocation names GPU $(alloc_index "$w" open), Slurm gave $seen"
  sleep 0.2
done
events=$("${g[@]}" -o json events --workload "$w" -n 0)
expect_eq "$(jq -r '[.items[] | select(.type == "devices") | .message] | join("|")' <<<"$events")" \
  "Slurm gave GPUs $seen of node1, not $first: allocation moved" "the devices event"
wait_state "$w" succeeded 30
expect_eq "$(alloc_index "$w")" "$seen" "the closed allocation's GPU"
expect_eq "$(jq -r '[.items[].type] | join(",")' <<<"$("${g[@]}" -o json events --workload "$w" -n 0)")" \
  "submitted,admitted,running,devices,succeeded" "the events, in time order"
# Crosswise: A starts (gpuaas recorded GPU 0, Slurm gave 1); B is placed at once, before
# A is reconciled (A must run a second first), so on GPU 1 in gpuaas' view (Slurm gives
# it 2). A's report then moves A onto GPU 1 and B's row there swaps to 0; B's own report
# moves it to 2. Whatever the order, each allocation ends on the GPU its job saw.
printed() { # workload: the devices its job printed, once it has
  for _ in $(seq 100); do
    grep -q devices= "$TMP/logs/$1.log" 2>/dev/null && break
    sleep 0.1
  done
  sed -n 's/^devices=//p' "$TMP/logs/$1.log"
}
a=$("${g[@]}" -o json run --project owners --flavor h100.1x --owned -- sh -c \
  'echo "devices=$CUDA_VISIBLE_DEVICES"; sleep 8' | jq -r .id)
wait_state "$a" running 30
b=$("${g[@]}" -o json run --project owners --flavor h100.1x --owned -- sh -c \
  'echo "devices=$CUDA_VISIBLE_DEVICES"; sleep 8' | jq -r .id)
wait_state "$b" running 30
a_seen=$(printed "$a")
b_seen=$(printed "$b")
[ -n "$a_seen" ] && [ -n "$b_seen" ] && [ "$a_seen" != "$b_seen" ] ||
  fail "the jobs printed '$a_seen' and '$b_seen'"
deadline=$((SECONDS + 8))
until [ "$(alloc_index "$a" open) $(alloc_index "$b" open)" = "$a_seen $b_seen" ]; do
  [ $SECONDS -lt $deadline ] ||
    fail "open allocations on $(alloc_index "$a" open) $(alloc_index "$b" open), Slurm gave $a_seen $b_seen"
  sleep 0.2
done
if grep -q "msg=\"slurm devices: allocations swapped\" workload=$a" "$DAEMON_LOG"; then
  echo "A's report swapped with B's row"
else
  # B was placed only after A's report (a loaded machine): no swap to see this time.
  echo "note: no swap this run: $(grep 'slurm devices' "$DAEMON_LOG" | tr '\n' ' ')"
fi
wait_state "$a" succeeded 30
wait_state "$b" succeeded 30

# The scheduler was rebuilt on the moved rows: more work still fits and runs.
w2=$("${g[@]}" -o json run --project owners --flavor h100.1x --owned -- sh -c 'echo two' | jq -r .id)
wait_state "$w2" succeeded 30
out=$("${g[@]}" usage verify) || fail "usage verify: $out"
stop_daemon
scancel "$foreign"
echo "slurm devices e2e: ok"
