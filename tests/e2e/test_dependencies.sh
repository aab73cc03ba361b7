#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Dependencies and holds, as Slurm users know them (sbatch --dependency,
# scontrol hold/release), through the CLI on a simulated fleet: work after
# another waits until that one has ended (--after) or succeeded (--after-ok),
# saying so; an after-ok dependency that fails cancels its dependent, saying
# why; held work keeps its place and is scheduled once released; bad requests
# are refused with a clear error; and all of it survives a restart.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sim_setup.sh"

start_daemon "$TMP/gpuaas.db" --sim-fleet "$FLEET" --grace-s 1
setup_teams
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
run() { "${g[@]}" -o json run --project team-a --flavor h100.1x "$@" -- work | jq -r .id; }
reason_of() {
  api GET "/v1/workloads/$1" "$ADMIN_TOKEN"
  jq -r .reason <<<"$BODY"
}
wait_reason() { # ID TEXT
  local deadline=$((SECONDS + 10))
  until [[ "$(reason_of "$1")" == *"$2"* ]]; do
    [ $SECONDS -lt $deadline ] || fail "workload $1's reason never said '$2': $(reason_of "$1")"
    sleep 0.1
  done
}

# A runs 3 s; B after it succeeded, C after it ended, D held.
a=$(run --duration 3)
b=$(run --duration 1 --after-ok "$a")
c=$(run --duration 1 --after "$a")
d=$(run --duration 1 --hold)
wait_state "$a" running 10
wait_reason "$b" "waiting for workload $a to succeed (a dependency)"
wait_reason "$c" "waiting for workload $a to end (a dependency)"
wait_reason "$d" "held: not scheduled until released (gpuaas release $d)"
for w in "$b" "$c" "$d"; do expect_eq "$(state_of "$w")" queued "workload $w waits, queued"; done
expect_contains "$("${g[@]}" ps --project team-a)" "waiting for workload $a to succeed" "ps says why"
wait_state "$a" succeeded 10
wait_state "$b" succeeded 15
wait_state "$c" succeeded 15
expect_contains "$("${g[@]}" -o json events --workload "$b" -n 0 | jq -r '.items[].type' | tr '\n' ' ')" \
  "eligible" "B's events say when it could go"
sleep 1
expect_eq "$(state_of "$d")" queued "held work stays queued"

# Release: it runs. Holding or releasing work that is not queued is a conflict.
"${g[@]}" release "$d" >/dev/null
wait_state "$d" succeeded 15
api POST "/v1/workloads/$d/hold" "$ADMIN_TOKEN"
expect_eq "$HTTP_STATUS" 409 "holding finished work"
expect_contains "$BODY" "only queued work can be held" "why"

# An after-ok dependency that is cancelled: its dependent is cancelled, saying why.
e=$(run --duration 3600)
f=$(run --duration 1 --after-ok "$e")
wait_state "$e" running 10
"${g[@]}" cancel "$e" >/dev/null
wait_state "$f" cancelled 15
expect_contains "$(reason_of "$f")" "its dependency, workload $e, ended cancelled" "F's reason"

# Hold and release queued work that waits for its dependency: it waits for it again.
h=$(run --duration 3600)
i=$(run --duration 1 --after "$h")
wait_state "$h" running 10
expect_eq "$("${g[@]}" hold "$i")" "workload $i: held" "hold"
wait_reason "$i" "held"
expect_eq "$("${g[@]}" release "$i")" "workload $i: released" "release"
wait_reason "$i" "waiting for workload $h to end"

# Bad requests: clear errors, nothing submitted.
before=$("${g[@]}" -o json ps --all | jq '.items | length')
api POST /v1/workloads "$ADMIN_TOKEN" "{\"project_id\":$PROJECT_A,\"flavor_id\":$FLAVOR_1X,\"after_id\":$e,\"after_ok\":true}"
expect_eq "$HTTP_STATUS" 400 "after-ok on cancelled work"
expect_contains "$BODY" "it can never succeed" "why"
api POST /v1/workloads "$ADMIN_TOKEN" "{\"project_id\":$PROJECT_A,\"flavor_id\":$FLAVOR_1X,\"after_id\":999999}"
expect_eq "$HTTP_STATUS" 400 "after an unknown workload"
api POST /v1/workloads "$ADMIN_TOKEN" "{\"project_id\":$PROJECT_A,\"flavor_id\":$FLAVOR_1X,\"after_ok\":true}"
expect_eq "$HTTP_STATUS" 400 "after_ok alone"
rc=0
"${g[@]}" run --project team-a --flavor h100.1x --after x -- work >/dev/null 2>"$TMP/err" || rc=$?
expect_eq "$rc" 2 "--after x is a usage error"
expect_eq "$("${g[@]}" -o json ps --all | jq '.items | length')" "$before" "nothing was submitted"

# Across a restart: held work stays held, dependent work still waits; both go later.
j=$(run --duration 1 --hold)
wait_reason "$j" "held"
stop_daemon
start_daemon "$TMP/gpuaas.db" --sim-fleet "$FLEET" --grace-s 1
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
wait_reason "$j" "held"
wait_reason "$i" "waiting for workload $h to end"
"${g[@]}" release "$j" >/dev/null
wait_state "$j" succeeded 15
"${g[@]}" cancel "$h" >/dev/null
wait_state "$i" succeeded 15
check_daemon_alive
echo "PASS"
