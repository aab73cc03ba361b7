#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# P1 reclaims P2 on Slurm, end to end (the local backend's version is
# tests/e2e/test_local_reclaim.sh): on a one-node Slurm (8 GPUs) that
# with-slurm.sh stood up, another team's opportunistic (P2) work borrows all
# of the owners' GPUs as a real Slurm job that traps SIGTERM; the owners then
# submit owned (P1) work that needs them. The P2 job gets SIGTERM (its log
# says so), ends within the grace and is recorded preempted; the P1 work then
# runs as a Slurm job on that node; every allocation is closed, the usage
# ledger has each run once and verifies.
. "${GPUAAS_SOURCE_DIR:?}/tests/e2e/lib.sh"
: "${SLURM_CONF:?run through tests/slurm/with-slurm.sh}"

grace_s=5
start_daemon "$TMP/gpuaas.db" --log-dir "$TMP/logs" --grace-s "$grace_s" --slurm-sync-s 1
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
slurm_cluster 8
"${g[@]}" flavor create h100.8x --gpu-class h100 --gpu-milli 8000 --vcpus 1 --memory-mib 256 >/dev/null
owners_and_guests sl 8000

# The guests' P2 job borrows all 8 GPUs; on SIGTERM it says so and exits at once.
guest=$("${g[@]}" -o json run --project guests --flavor h100.8x --no-requeue -- sh -c \
  "trap 'echo got-sigterm; exit 143' TERM; echo guest-up; while :; do sleep 0.05; done" | jq -r .id)
wait_state "$guest" running 30
for _ in $(seq 200); do
  grep -q guest-up "$TMP/logs/$guest.log" 2>/dev/null && break
  sleep 0.1
done
grep -q guest-up "$TMP/logs/$guest.log" || fail "the guest's job never ran: $(ls "$TMP/logs")"
# Jobs are named gpuaas-<daemon: 8 hex digits>-<workload id>.
job_of() { squeue -h -t all -o '%i %j' | grep -E " gpuaas-[0-9a-f]{8}-$1\$" | cut -d' ' -f1; }
guest_job=$(job_of "$guest")
[ -n "$guest_job" ] || fail "no Slurm job named gpuaas-<daemon>-$guest: $(squeue -h -t all -o '%i %j')"
expect_eq "$(squeue -h -t all -j "$guest_job" -o %T)" RUNNING "the guest's Slurm job"
sleep 0.5 # the trap is set before guest-up is printed; give the loop a moment anyway

# The owners need their 8 GPUs back.
t_submit=$(date +%s%3N)
# (It runs past a whole second: Slurm dates ends in whole seconds, and a run that
# ends within its start's second is zero long, which the ledger does not record.)
own=$("${g[@]}" -o json run --project owners --flavor h100.8x --owned -- sh -c \
  'echo "owner-ran devices=$CUDA_VISIBLE_DEVICES"; sleep 1.2' | jq -r .id)
wait_state "$guest" preempted $((grace_s + 20))
t_preempted=$(date +%s%3N)
expect_contains "$("${g[@]}" logs "$guest")" got-sigterm "the guest's job got SIGTERM"
api GET "/v1/workloads/$guest" "$ADMIN_TOKEN"
expect_eq "$(jq -r .reason <<<"$BODY")" preempted "the guest's reason"
events=$("${g[@]}" -o json events --workload "$guest" -n 0)
expect_eq "$(jq -r '[.items[].type] | join(",")' <<<"$events")" \
  "submitted,admitted,running,preempting,preempted" "the guest's events, in time order"
# Ended by its trap within the grace, not killed at its end.
api GET "/v1/preemptions" "$ADMIN_TOKEN"
expect_eq "$(jq '.items | length' <<<"$BODY")" 1 "one preemption in the ledger"
reclaim_ms=$(jq '.items[0].reclaim_ms' <<<"$BODY")
[ "$reclaim_ms" != null ] || fail "the reclaim never completed: $BODY"
[ "$reclaim_ms" -lt $((grace_s * 1000)) ] || fail "the guest took $reclaim_ms ms, not within the ${grace_s} s grace"
[ $((t_preempted - t_submit)) -lt $((grace_s * 1000 + 3000)) ] ||
  fail "preempted $((t_preempted - t_submit)) ms after the owners' submit"
expect_contains "$(squeue -h -t all -j "$guest_job" -o %T)" FAILED "the guest's Slurm job ended by its exit 143"

# The owners' work then runs on Slurm, on that node, and succeeds.
wait_state "$own" succeeded 30
expect_contains "$("${g[@]}" logs "$own")" "owner-ran devices=0,1,2,3,4,5,6,7" "the owners' job ran with all 8 GPUs"
expect_eq "$(squeue -h -t all -j "$(job_of "$own")" -o '%T %N')" "COMPLETED node1" "the owners' Slurm job"

# Usage: every allocation closed, each run metered once, the ledger verifies.
open_allocs=$(sqlite3 "$TMP/gpuaas.db" \
  "SELECT count(*) FROM allocations WHERE workload_id IN ($guest, $own) AND ended_ms IS NULL")
expect_eq "$open_allocs" 0 "open allocations"
expect_eq "$(sqlite3 "$TMP/gpuaas.db" "SELECT DISTINCT end_reason FROM allocations WHERE workload_id = $guest")" \
  preempted "the guest's allocations' end"
for w in "$guest" "$own"; do
  expect_eq "$(sqlite3 "$TMP/gpuaas.db" "SELECT count(*) FROM usage_records WHERE workload_id = $w")" 1 \
    "usage records of workload $w"
done
out=$("${g[@]}" usage verify) || fail "usage verify: $out"
expect_contains "$out" "ledger ok" "the usage ledger"
stop_daemon
echo "slurm reclaim e2e: ok"
