#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The scenario the scheduler exists for, through the CLI: teams A and B each
# own 8 GPUs; B borrows A's idle GPUs with opportunistic (P2) work; A submits
# owned (P1) work and has its GPUs back within the grace period; the ledger,
# both teams' events and the GPU timeline show what happened, and each team
# sees only its own side (of the ledger too: the other's parts redacted).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sim_setup.sh"

GRACE=2
start_daemon "$TMP/gpuaas.db" --sim-fleet "$FLEET" --grace-s "$GRACE"
setup_teams
admin=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
"${admin[@]}" user create alice >/dev/null
"${admin[@]}" user create bob >/dev/null
"${admin[@]}" role-binding create --user alice --role member --project team-a >/dev/null
"${admin[@]}" role-binding create --user bob --role member --project team-b >/dev/null
alice=("$GPUAAS" --server "$URL" --token "$("${admin[@]}" -o json token create --user alice | jq -r .token)")
bob=("$GPUAAS" --server "$URL" --token "$("${admin[@]}" -o json token create --user bob | jq -r .token)")

# Each team owns 8 GPUs: the capacity view says so and nothing is overcommitted.
cap=$("${admin[@]}" -o json capacity)
expect_eq "$(jq -r '.items[0].guaranteed_milli' <<<"$cap")" 16000 "guaranteed h100"
expect_eq "$(jq -r '.items[0].warning // "none"' <<<"$cap")" none "no overcommit warning"

# B fills the fleet with 16 one-GPU opportunistic jobs: 8 on its own node, 8 borrowed from A.
for i in $(seq 16); do
  "${bob[@]}" run --flavor h100.1x --name "b-$i" --duration 1h -- python sweep.py --trial "$i" >/dev/null
done
deadline=$((SECONDS + 10))
until [ "$("${bob[@]}" -o json ps | jq '[.items[] | select(.state == "running")] | length')" = 16 ]; do
  [ $SECONDS -lt $deadline ] || fail "B's 16 jobs did not all start"
  sleep 0.2
done
borrowed=$(sqlite3 "$TMP/gpuaas.db" "SELECT count(*) FROM allocations WHERE borrowed = 1 AND ended_ms IS NULL;")
expect_eq "$borrowed" 8 "B borrows 8 of A's GPUs"

# A wants its 8 GPUs back: two 4-GPU owned jobs.
start=$(date +%s%N)
a1=$("${alice[@]}" -o json run --flavor h100.4x --owned --name train-1 --duration 1h -- python train.py | jq -r .id)
a2=$("${alice[@]}" -o json run --flavor h100.4x --owned --name train-2 --duration 1h -- python train.py | jq -r .id)
wait_state "$a1" running 15
wait_state "$a2" running 15
waited_ms=$((($(date +%s%N) - start) / 1000000))
# (The daemon's own reclaim_ms is checked exactly below; this bound leaves
# room for the CLI and polling on a loaded machine.)
[ "$waited_ms" -le $((GRACE * 1000 + 6000)) ] ||
  fail "A waited ${waited_ms} ms for its GPUs; the grace period is ${GRACE} s"

# The ledger: who was preempted for whom, by which rule, and the reclaim latency.
ledger=$("${admin[@]}" -o json preemptions list)
expect_eq "$(jq '.items | length' <<<"$ledger")" 2 "ledger entries (one per A job)"
expect_eq "$(jq '[.items[].victims | length] | add' <<<"$ledger")" 8 "victims in all"
expect_eq "$(jq -r '[.items[].rule] | unique | join(",")' <<<"$ledger")" reclaim "rule"
expect_eq "$(jq -r "[.items[].victims[].project_id | tostring] | unique | join(\",\")" <<<"$ledger")" \
  "$PROJECT_B" "victims are B's"
for r in $(jq -r '.items[].reclaim_ms' <<<"$ledger"); do
  [ "$r" != null ] && [ "$r" -le $((GRACE * 1000)) ] || fail "reclaim took $r ms, grace is ${GRACE}000"
done
expect_eq "$(jq -r '.items[0].quota_before[] | select(.project_id == '"$PROJECT_B"') | .used' <<<"$ledger")" \
  16000 "B's usage before the first reclaim"
show=$("${admin[@]}" preemptions show "$(jq -r '.items[0].id' <<<"$ledger")")
expect_contains "$show" "reclaim" "ledger entry shown"

# Only borrowed work was taken: B still runs 8 jobs on its own node, the 8 others are queued again.
ps_b=$("${bob[@]}" -o json ps)
expect_eq "$(jq '[.items[] | select(.state == "running")] | length' <<<"$ps_b")" 8 "B keeps its own 8"
expect_eq "$(jq '[.items[] | select(.state == "queued")] | length' <<<"$ps_b")" 8 "B's victims requeued"
queue=$("${bob[@]}" queue)
expect_contains "$queue" "h100" "B's queue explains why it waits"

# Both teams' events tell their side; neither sees the other's.
ev_a=$("${alice[@]}" events --project team-a -n 0)
expect_contains "$ev_a" "reclaiming" "A's events show the reclaim"
expect_contains "$ev_a" "admitted" "A's events show the admission"
ev_b=$("${bob[@]}" events --project team-b -n 0)
expect_contains "$ev_b" "preempted" "B's events show the preemption"
expect_contains "$ev_b" "requeued" "B's events show the requeue"
rc=0; "${bob[@]}" events --project team-a >/dev/null 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "B may not read A's events"

# Both parties see the ledger entries, each with the other tenant's parts redacted.
ledger_b=$("${bob[@]}" -o json preemptions list)
expect_eq "$(jq '.items | length' <<<"$ledger_b")" 2 "B, the victim, sees the entries"
expect_eq "$(jq '[.items[] | select(.preemptor_id != null or .project_id != null)] | length' <<<"$ledger_b")" \
  0 "A's workload and project hidden from B"
expect_eq "$(jq -r '[.items[].quota_before[].project_id, .items[].quota_after[].project_id] | unique | map(tostring) | join(",")' <<<"$ledger_b")" \
  "$PROJECT_B" "B sees only its own quota"
expect_eq "$(jq '[.items[].victims[] | select(.project_id == '"$PROJECT_B"')] | length' <<<"$ledger_b")" 8 \
  "B sees its own victims"
ledger_a=$("${alice[@]}" -o json preemptions list)
expect_eq "$(jq '.items | length' <<<"$ledger_a")" 2 "A, the preemptor, sees the entries"
expect_eq "$(jq '[.items[].victims[] | select(.workload_id != null or .project_id != null)] | length' <<<"$ledger_a")" \
  0 "B's workloads hidden from A"
expect_eq "$(jq '[.items[].victims[].gpu_milli] | add' <<<"$ledger_a")" 8000 "A sees the GPUs it took back"
expect_eq "$(jq -r '[.items[].quota_before[].project_id, .items[].quota_after[].project_id] | unique | map(tostring) | join(",")' <<<"$ledger_a")" \
  "$PROJECT_A" "A sees only its own quota"
# The entry a victim's event names can be read by the victim's viewers.
entry=$(grep -o "ledger entry [0-9]*" <<<"$ev_b" | head -1 | cut -d' ' -f3)
[ -n "$entry" ] || fail "B's events name no ledger entry: $ev_b"
api GET "/v1/preemptions/$entry" "${bob[4]}"
expect_eq "$HTTP_STATUS" 200 "B reads the entry its event names"
expect_eq "$(jq -r .preemptor_id <<<"$BODY")" null "B's read of it is redacted too"
"${bob[@]}" preemptions list >/dev/null || fail "B's table of the ledger"
"${bob[@]}" preemptions show "$entry" >/dev/null || fail "B's view of entry $entry"
"${admin[@]}" user create carol >/dev/null
"${admin[@]}" project create team-c --org acme >/dev/null
"${admin[@]}" role-binding create --user carol --role viewer --project team-c >/dev/null
carol=$("${admin[@]}" -o json token create --user carol | jq -r .token)
api GET "/v1/preemptions/$entry" "$carol"
expect_eq "$HTTP_STATUS" 404 "a third tenant does not see the entry"
api GET /v1/preemptions "$carol"
expect_eq "$(jq '.items | length' <<<"$BODY")" 0 "a third tenant's ledger"

# The timeline marks the preempted allocations: one per GPU taken back.
timeline=$("${admin[@]}" timeline)
expect_contains "$timeline" "preempted" "timeline marks preemptions"
expect_eq "$(grep -c "preempted" <<<"$timeline")" 8 "one preempted allocation per reclaimed GPU"
"${admin[@]}" timeline --node node-a | grep -qw "$a1" || fail "A's first job does not run on its own node"

# A at its guarantee causes no further preemption: more owned work waits, with the reason.
a3=$("${alice[@]}" -o json run --flavor h100.1x --owned --name extra --duration 1h -- true | jq -r .id)
sleep 1
api GET "/v1/workloads/$a3" "$ADMIN_TOKEN"
expect_eq "$(jq -r .state <<<"$BODY")" queued "A beyond its guarantee waits"
expect_contains "$(jq -r .reason <<<"$BODY")" "guarantee" "reason names the guarantee"
expect_eq "$("${admin[@]}" -o json preemptions list | jq '.items | length')" 2 "no new preemption"

# Cancelling releases the GPUs; B's queued work takes them.
"${alice[@]}" cancel "$a1" "$a3" >/dev/null
wait_state "$a1" cancelled 10
deadline=$((SECONDS + 10))
until [ "$("${bob[@]}" -o json ps | jq '[.items[] | select(.state == "running")] | length')" = 12 ]; do
  [ $SECONDS -lt $deadline ] || fail "B did not get the freed GPUs"
  sleep 0.2
done
# /metrics (admins): the reclaims, their latency, GPUs by state and the quotas, in the
# Prometheus text format with its content type.
curl -sS -D "$TMP/mh" -o "$TMP/metrics" -H "Authorization: Bearer $ADMIN_TOKEN" "$URL/metrics"
expect_contains "$(cat "$TMP/mh")" "text/plain; version=0.0.4" "metrics content type"
m=$(cat "$TMP/metrics")
expect_contains "$m" 'gpuaas_preemptions_total{rule="reclaim"} 2' "preemptions counted by rule"
expect_contains "$m" 'gpuaas_reclaim_latency_seconds_count 2' "reclaim latencies observed"
expect_contains "$m" '# TYPE gpuaas_queue_wait_seconds histogram' "queue wait histogram"
expect_contains "$m" 'gpuaas_gpus{state="allocated",gpu_class="h100",cluster="sim"} 16' "GPUs by state"
expect_contains "$m" 'kind="guaranteed"} 8.000' "guarantees as GPUs"
expect_contains "$m" 'gpuaas_http_requests_total{method="POST",code="201"}' "HTTP requests"
api GET /metrics "${bob[4]}"
expect_eq "$HTTP_STATUS" 403 "a member reading /metrics"
stop_daemon
echo "reclaim: ok (A had its GPUs back after ${waited_ms} ms)"
