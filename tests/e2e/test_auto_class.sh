#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The default priority class, through the CLI: work submitted without
# --owned/--opportunistic is owned (P1) while its project's owned work and it
# fit the guarantee, opportunistic (P2) beyond. Teams A and B each own 8 GPUs
# and may borrow the other's. B runs 12 one-GPU jobs: 8 owned on its node, 4
# opportunistic on A's. A runs two 4-GPU jobs, both owned: the second takes
# A's GPUs back from B's borrowed work, and B's own owned work is untouched.
# Events, reasons, allocations and the usage ledger say which class each got.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sim_setup.sh"

start_daemon "$TMP/gpuaas.db" --sim-fleet "$FLEET" --grace-s 1
setup_teams
admin=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
"${admin[@]}" user create alice >/dev/null
"${admin[@]}" user create bob >/dev/null
"${admin[@]}" role-binding create --user alice --role member --project team-a >/dev/null
"${admin[@]}" role-binding create --user bob --role member --project team-b >/dev/null
alice=("$GPUAAS" --server "$URL" --token "$("${admin[@]}" -o json token create --user alice | jq -r .token)")
bob=("$GPUAAS" --server "$URL" --token "$("${admin[@]}" -o json token create --user bob | jq -r .token)")

# classes_of PROJECT_ID: "owned opportunistic" counts of the project's open allocations.
classes_of() {
  api GET "/v1/allocations?project_id=$1&limit=1000" "$ADMIN_TOKEN"
  jq -r '[.items[] | select(.ended_ms == null)] |
    "\([.[] | select(.priority_class == "owned")] | length) \([.[] | select(.priority_class == "opportunistic")] | length)"' <<<"$BODY"
}

# The guarantee the rule uses: derived from the pools, shown with its figure.
api GET "/v1/quotas?project_id=$PROJECT_B" "$ADMIN_TOKEN"
expect_eq "$(jq -r '.items[0] | "\(.guaranteed_milli) \(.effective_guaranteed_milli)"' <<<"$BODY")" \
  "null 8000" "B's guarantee: none set, 8 GPUs from its pool"
expect_contains "$("${admin[@]}" quota list)" "8 (from pools)" "quota list"

# B: 12 jobs with no class flag, of class "auto".
ids=()
for i in $(seq 12); do
  ids+=("$("${bob[@]}" -o json run --flavor h100.1x --name "b-$i" --duration 1h -- sweep "$i" | jq -r .id)")
done
expect_eq "$(state_of "${ids[0]}" >/dev/null; jq -r .priority_class <<<"$BODY")" auto "the default class"
for id in "${ids[@]}"; do wait_state "$id" running 15; done
expect_eq "$(classes_of "$PROJECT_B")" "8 4" "B: owned within its guarantee of 8, opportunistic beyond"

# The fair-share view (as sshare): B borrows 4 of the class's 16 GPUs; A, borrowing
# nothing, is next in line for idle GPUs.
share=$("${admin[@]}" -o json share)
expect_eq "$(jq -c --argjson p "$PROJECT_B" '.items[] | select(.project_id == $p) |
  [.guaranteed_milli, .owned_milli, .opportunistic_milli, .borrowed_milli, .share, .next]' <<<"$share")" \
  "[8000,8000,4000,4000,0.25,2]" "B's share"
expect_eq "$(jq -c --argjson p "$PROJECT_A" '.items[] | select(.project_id == $p) | [.borrowed_milli, .next]' <<<"$share")" \
  "[0,1]" "A is next"
expect_contains "$("${admin[@]}" share)" "25.0 %" "the table"

# The events and the reason say which class each got, and why.
first=$("${bob[@]}" -o json events --workload "${ids[0]}" -n 0 | jq -r '.items[] | select(.type == "admitted") | .message')
expect_contains "$first" "admitted as owned (P1) work (automatic: within the project's guarantee, 0 owned in use + 1 <= 8)" \
  "the first job's admission"
last=$("${bob[@]}" -o json events --workload "${ids[11]}" -n 0 | jq -r '.items[] | select(.type == "admitted") | .message')
expect_contains "$last" "admitted as opportunistic (P2) work (automatic: beyond the project's guarantee, 8 owned in use + 1 > 8), on borrowed capacity" \
  "the last job's admission"
ps_b=$("${bob[@]}" ps -o wide)
expect_contains "$ps_b" "running as owned work (automatic class)" "B's ps: owned"
expect_contains "$ps_b" "running as opportunistic work (automatic class) on borrowed capacity" "B's ps: borrowed"
expect_contains "$ps_b" "auto" "B's ps: the CLASS column"

# A: two 4-GPU jobs, no class flag. The first fits A's 4 free GPUs; the second is owned
# too (4 + 4 <= 8) and takes back the 4 GPUs B borrowed.
a1=$("${alice[@]}" -o json run --flavor h100.4x --name train-1 --duration 1h -- train | jq -r .id)
wait_state "$a1" running 15
a2=$("${alice[@]}" -o json run --flavor h100.4x --name train-2 --duration 1h -- train | jq -r .id)
wait_state "$a2" running 20
expect_eq "$(classes_of "$PROJECT_A")" "8 0" "A: both jobs owned"
ledger=$("${admin[@]}" -o json preemptions list)
expect_eq "$(jq '.items | length' <<<"$ledger")" 1 "one reclaim"
expect_eq "$(jq -r '.items[0].preemptor_id' <<<"$ledger")" "$a2" "the second job reclaimed"
expect_eq "$(jq -r '[.items[0].victims[].workload_id | tostring] | sort | join(" ")' <<<"$ledger")" \
  "$(printf '%s\n' "${ids[@]:8:4}" | sort | tr '\n' ' ' | sed 's/ $//')" "the victims: B's opportunistic jobs"
a2_events=$("${alice[@]}" -o json events --workload "$a2" -n 0 | jq -r '.items[].message')
expect_contains "$a2_events" "automatic: within the project's guarantee, 4 owned in use + 4 <= 8" \
  "A's second job says why it was owned"

# B keeps its 8 owned jobs; the 4 victims wait again, as opportunistic work, and say so.
expect_eq "$(classes_of "$PROJECT_B")" "8 0" "B keeps its owned work"
api GET "/v1/workloads/${ids[11]}" "$ADMIN_TOKEN"
expect_eq "$(jq -r .state <<<"$BODY")" queued "a victim requeued"
expect_contains "$(jq -r .reason <<<"$BODY")" \
  "automatic class: opportunistic (P2), beyond the project's guarantee (8 owned in use + 1 > 8)" \
  "the victim's reason"
expect_contains "$(jq -r .reason <<<"$BODY")" \
  "back in its place in the queue after 1 preemption (gpuaas preemptions)" "the victim's reason says why"

# Metering rates each run as the class it got: B's first job owned, a victim's run opportunistic.
"${bob[@]}" cancel "${ids[0]}" >/dev/null
wait_state "${ids[0]}" cancelled 15
api GET "/v1/usage-records?workload_id=${ids[0]}" "$ADMIN_TOKEN"
expect_eq "$(jq -r '[.items[].priority_class] | unique | join(",")' <<<"$BODY")" owned \
  "the owned run's usage records"
api GET "/v1/usage-records?workload_id=${ids[11]}" "$ADMIN_TOKEN"
expect_eq "$(jq -r '[.items[].priority_class] | unique | join(",")' <<<"$BODY")" opportunistic \
  "the borrowed run's usage records"

# --owned and --opportunistic still force a class, and --auto names the default.
o=$("${bob[@]}" -o json run --flavor h100.1x --opportunistic --duration 1h -- x | jq -r .priority_class)
expect_eq "$o" opportunistic "--opportunistic"
o=$("${bob[@]}" -o json run --flavor h100.1x --auto --duration 1h -- x | jq -r .priority_class)
expect_eq "$o" auto "--auto"
rc=0
"${bob[@]}" run --flavor h100.1x --auto --owned -- x >/dev/null 2>"$TMP/err" || rc=$?
expect_eq "$rc" 2 "two classes at once"
check_daemon_alive
echo "PASS"
