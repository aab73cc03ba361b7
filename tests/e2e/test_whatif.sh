#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What-if on real history (issue 17), through the API and the CLI of a real
# daemon. Teams A and B (sim_setup.sh: 16 H100s, A owns one node, B the
# other, each limited to 16 GPUs) run short work that queues; then:
# - a replay without changes reproduces every recorded start to the second, and work
#   cancelled while it waited is replayed and cancelled at the same time, with the quotas
#   and pools the record ran under (changed after the fact);
# - two more nodes lower B's waits, more guarantee moves A's waits the right way;
# - the answer and the CLI's table say simulated; nothing live changed (the
#   workloads, allocations and events are as before, the fleet is 16 GPUs);
# - a trace file replays instead of the store; bad input is a 4xx that says why;
# - a member may not run one, an org admin sees only its organization's projects;
# - the daemon is still alive at the end (lib.sh's cleanup fails the test otherwise).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sim_setup.sh"

start_daemon "$TMP/gpuaas.db" --sim-fleet "$FLEET"
setup_teams
admin=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
t0=$(date -u +%s)
ids=()
for _ in 1 2 3; do ids+=("$(submit "$PROJECT_A" "$FLAVOR_4X" auto 2)"); done
for _ in 1 2 3 4 5; do ids+=("$(submit "$PROJECT_B" "$FLAVOR_4X" auto 3)"); done
# one more of B's, behind its limit, cancelled while it waits: replayed, and cancelled then
gave_up=$(submit "$PROJECT_B" "$FLAVOR_4X" auto 3)
api POST "/v1/workloads/$gave_up/cancel" "$ADMIN_TOKEN"
expect_eq "$HTTP_STATUS" 202 "cancelling queued work: $BODY"
for id in "${ids[@]}"; do wait_state "$id" succeeded 60; done
wait_state "$gave_up" cancelled 20
from=$(date -u -d "@$((t0 - 60))" +%FT%TZ)
to=$(date -u -d "@$((t0 + 3600))" +%FT%TZ)
CLASS=$("${admin[@]}" -o json gpu-class show h100 | jq -r .id)
# After the fact, B's limit is cut to one job's worth, A's quota is removed, B's pool is
# closed to A and B weighs three times as much: a replay of today's quotas and pools would run B's work one job at a time and
# keep A's third job out of B's pool; the record's, from the audit trail, are what it replays.
api GET "/v1/quotas?project_id=$PROJECT_B" "$ADMIN_TOKEN"
b_quota=$(jq -r '.items[0].id' <<<"$BODY")
"${admin[@]}" quota update "$b_quota" --limit-milli 4000 >/dev/null || fail "cutting B's limit"
api GET "/v1/quotas?project_id=$PROJECT_A" "$ADMIN_TOKEN"
"${admin[@]}" quota delete "$(jq -r '.items[0].id' <<<"$BODY")" >/dev/null || fail "deleting A's quota"
"${admin[@]}" pool update pool-b --access-projects '' >/dev/null || fail "closing B's pool to A"
api PATCH "/v1/projects/$PROJECT_B" "$ADMIN_TOKEN" '{"weight":3}'
expect_eq "$HTTP_STATUS" 200 "giving B three times the weight: $BODY"

api GET "/v1/allocations?limit=1000" "$ADMIN_TOKEN"
allocs_before=$(jq -c '[.items[] | [.id, .started_ms, .ended_ms]]' <<<"$BODY")
api GET "/v1/events?after=0&limit=1000" "$ADMIN_TOKEN"
events_before=$(jq '.items | length' <<<"$BODY")

# whatif BODY: POSTs it as the admin; the answer in BODY.
whatif() {
  api POST /v1/whatif "${2:-$ADMIN_TOKEN}" "$1"
}

# The baseline reproduces the record.
whatif "{\"from\":\"$from\",\"to\":\"$to\"}"
expect_eq "$HTTP_STATUS" 200 "a what-if without changes: $BODY"
expect_eq "$(jq -r .simulated <<<"$BODY")" true "the answer says simulated"
expect_contains "$(jq -r .label <<<"$BODY")" "simulated" "and its label too"
expect_eq "$(jq -r .workloads <<<"$BODY")" 9 "the period's nine workloads are replayed"
expect_eq "$(jq -r .never_started <<<"$BODY")" 1 "one never started"
expect_eq "$(jq -r .baseline.overall.cancelled <<<"$BODY")" 1 "and leaves the queue as it did"
expect_eq "$(jq -c .baseline.starts_reproduced <<<"$BODY")" '{"compared":8,"same":8}' \
  "the replay without changes reproduces every recorded start to the second"
# the simulated fleet's two nodes (made at the daemon's start), setup_teams' two quotas and
# its update of pool-a, all within the period, then the four changes above
expect_eq "$(jq -r .baseline.recorded_changes <<<"$BODY")" 9 "the record's quota, pool and weight changes are replayed"
expect_eq "$(jq -c '.baseline.overall' <<<"$BODY")" "$(jq -c '.changed.overall' <<<"$BODY")" \
  "no changes: both runs the same"
expect_eq "$(jq -r .baseline.capacity_gpus <<<"$BODY")" 16 "the fleet as it is: 16 GPUs"
b_wait=$(jq -r '.baseline.projects[] | select(.project=="team-b") | .wait_p95_s' <<<"$BODY")
[ "$b_wait" -ge 1 ] || fail "B's work queued in the record (p95 wait $b_wait s)"

# Two more nodes: nobody waits for room; B's fifth job still waits for B's limit of 16.
whatif "{\"from\":\"$from\",\"to\":\"$to\",\"changes\":[{\"kind\":\"add_nodes\",\"gpu_class_id\":$CLASS,\"count\":2}]}"
expect_eq "$HTTP_STATUS" 200 "add_nodes: $BODY"
expect_eq "$(jq -r .changed.capacity_gpus <<<"$BODY")" 32 "two nodes of 8 added"
expect_eq "$(jq -r .changed.overall.preemptions <<<"$BODY")" 0 "room for all: no reclaim"
a_base=$(jq -r '.baseline.projects[] | select(.project=="team-a") | .wait_max_s' <<<"$BODY")
a_chg=$(jq -r '.changed.projects[] | select(.project=="team-a") | .wait_max_s' <<<"$BODY")
[ "$a_chg" -le "$a_base" ] || fail "more nodes raised A's wait ($a_base -> $a_chg)"
expect_eq "$a_chg" 0 "A never waits with two more nodes"

# The CLI: the same what-if, every heading saying SIMULATED.
out=$("${admin[@]}" whatif --from "$from" --to "$to" --add-nodes h100:2 --quota team-a:h100:+4 \
  --grace 0) || fail "gpuaas whatif failed: $out"
expect_contains "$out" "SIMULATED what-if" "the CLI's title says simulated"
expect_contains "$out" "capacity GPUs   16        32" "capacity side by side"
expect_contains "$out" "the baseline reproduces 8 of 8 recorded starts to the second" "fidelity"
expect_contains "$out" "quotas, caps, pools, nodes and weights changed 9 times in the period" "and says how often they changed"
expect_contains "$out" "PROJECT (SIMULATED)" "the project table says simulated"
expect_contains "$out" "team-b" "a row per project"
json=$("${admin[@]}" -o json whatif --period "$(date -u +%Y-%m)" --policy fgd-fill)
expect_eq "$(jq -r .simulated <<<"$json")" true "-o json is the API's answer"

# Nothing live changed: the record is as it was, the fleet still 16 GPUs.
api GET "/v1/allocations?limit=1000" "$ADMIN_TOKEN"
expect_eq "$(jq -c '[.items[] | [.id, .started_ms, .ended_ms]]' <<<"$BODY")" "$allocs_before" \
  "allocations untouched"
api GET "/v1/events?after=0&limit=1000" "$ADMIN_TOKEN"
expect_eq "$(jq '.items | length' <<<"$BODY")" "$events_before" "no events written"
api GET /v1/capacity "$ADMIN_TOKEN"
expect_eq "$(jq -r '.items[0].capacity_milli' <<<"$BODY")" 16000 "the live fleet is unchanged"

# A trace replays instead of the store.
cat >"$TMP/trace.csv" <<CSV
submitted_at,project,flavor,run_s,priority_class
$from,team-a,h100.4x,600,auto
$from,team-a,h100.4x,600,auto
$from,team-a,h100.4x,600,auto
$from,team-a,h100.4x,600,auto
$from,team-a,h100.4x,600,auto
CSV
out=$("${admin[@]}" -o json whatif --from "$from" --to "$to" --trace "$TMP/trace.csv") ||
  fail "whatif --trace failed: $out"
expect_eq "$(jq -r .source <<<"$out")" trace "the trace was replayed"
expect_eq "$(jq -r .workloads <<<"$out")" 5 "its five lines"
# A trace is replayed on the world as it is now: A's quota is gone and B's pool closed to it,
# so A runs on its own 8 GPUs, two jobs at a time, and the fifth starts after 1200 s.
expect_eq "$(jq -r .baseline.overall.wait_max_s <<<"$out")" 1200 "A's fifth job waits for A's own GPUs"
expect_eq "$(jq -r .baseline.recorded_changes <<<"$out")" 0 "a trace replays no recorded changes"

# Bad input: a clear 4xx.
whatif "{\"from\":\"$from\",\"to\":\"2099-01-01T00:00:00Z\"}"
expect_eq "$HTTP_STATUS" 400 "a period over 31 days"
expect_contains "$(jq -r .error.message <<<"$BODY")" "31 days" "says the bound"
whatif "{\"period\":\"2026-11\",\"changes\":[{\"kind\":\"warp\"}]}"
expect_eq "$HTTP_STATUS" 400 "an unknown kind of change"
expect_contains "$(jq -r .error.message <<<"$BODY")" "changes[0]" "names the change"
whatif "{\"period\":\"2026-11\",\"changes\":[{\"kind\":\"add_nodes\",\"gpu_class_id\":$CLASS,\"count\":5000}]}"
expect_eq "$HTTP_STATUS" 400 "too many nodes at once"
whatif "{\"period\":\"2026-11\",\"changes\":[{\"kind\":\"policy\",\"policy\":\"nope\"}]}"
expect_eq "$HTTP_STATUS" 400 "an unknown policy"
expect_contains "$(jq -r .error.message <<<"$BODY")" "fgd-fill" "lists the policies"
printf 'submitted_at,project\n%s,team-a\n' "$from" >"$TMP/bad.csv"
"${admin[@]}" whatif --from "$from" --to "$to" --trace "$TMP/bad.csv" 2>"$TMP/bad.err" &&
  fail "a trace without run_s was accepted"
expect_contains "$(cat "$TMP/bad.err")" "run_s" "the trace's missing column is named"
"${admin[@]}" whatif --from "$from" --to "$to" --quota team-a:h100:8 2>"$TMP/q.err" &&
  fail "--quota without a sign was accepted"
expect_contains "$(cat "$TMP/q.err")" "PROJECT:CLASS:+N" "the CLI says the form"

# Roles: a member may not; an org admin of another organization sees only its own projects.
"${admin[@]}" user create mia >/dev/null
"${admin[@]}" role-binding create --user mia --role member --project team-a >/dev/null
mia=$("${admin[@]}" -o json token create --user mia | jq -r .token)
whatif "{\"from\":\"$from\",\"to\":\"$to\"}" "$mia"
expect_eq "$HTTP_STATUS" 403 "a member may not run a what-if"
"${admin[@]}" org create other >/dev/null
"${admin[@]}" project create team-z --org other >/dev/null
"${admin[@]}" user create olga >/dev/null
"${admin[@]}" role-binding create --user olga --role org-admin --org other >/dev/null
olga=$("${admin[@]}" -o json token create --user olga | jq -r .token)
whatif "{\"from\":\"$from\",\"to\":\"$to\"}" "$olga"
expect_eq "$HTTP_STATUS" 200 "an org admin may"
expect_eq "$(jq -c '[.baseline.projects[].project]' <<<"$BODY")" '[]' \
  "other organizations' projects are not shown"
expect_eq "$(jq -r .baseline.idle_gpu_hours <<<"$BODY")" null "nor the fleet's idle time"
expect_eq "$(jq -r .baseline.recorded_changes <<<"$BODY")" null "nor how often quotas and nodes changed"
case "$BODY" in *team-a* | *team-b*) fail "the org admin's answer names acme's teams: $BODY" ;; esac
whatif "{\"from\":\"$from\",\"to\":\"$to\",\"changes\":[{\"kind\":\"quota\",\"project_id\":$PROJECT_A,\"gpu_class_id\":$CLASS,\"gpus\":1}]}" "$olga"
expect_eq "$HTTP_STATUS" 400 "another organization's project reads as unknown"
expect_contains "$(jq -r .error.message <<<"$BODY")" "no project with id" "as if it did not exist"

check_daemon_alive
echo "PASS"
