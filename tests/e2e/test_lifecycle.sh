#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A workload's life through the CLI on a simulated fleet: it runs for its
# duration and succeeds; a maximum runtime stops it (failed, with the
# reason); cancelling running work stops it after its grace; cancelling
# queued work is immediate; work that can never run says so; every step is
# an event and every GPU-interval an allocation that is closed once.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sim_setup.sh"

start_daemon "$TMP/gpuaas.db" --sim-fleet "$FLEET" --grace-s 1
setup_teams
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
run() { "${g[@]}" -o json run --project team-a "$@" | jq -r .id; }

ok=$(run --flavor h100.1x --duration 1 -- true)
timeout=$(run --flavor h100.1x --duration 1h --max-runtime 1 -- sleep infinity)
long=$(run --flavor h100.1x --duration 1h --grace 1 -- sleep infinity)
wait_state "$ok" succeeded 10
wait_state "$timeout" failed 10
expect_contains "$("${g[@]}" show "$timeout")" "maximum runtime" "max runtime reason"
wait_state "$long" running 10
"${g[@]}" cancel "$long" >/dev/null
wait_state "$long" cancelled 10

# Queued work: cancelled at once. Impossible work: says it can never run.
for i in 1 2 3 4; do run --flavor h100.4x --duration 1h -- true >/dev/null; done
queued=$(run --flavor h100.4x --duration 1h -- true)
sleep 0.5
expect_eq "$(state_of "$queued")" queued "fifth 4-GPU job waits (16 GPUs in use)"
"${g[@]}" cancel "$queued" >/dev/null
expect_eq "$(state_of "$queued")" cancelled "queued work cancelled at once"
rc=0; "${g[@]}" cancel "$queued" 2>/dev/null || rc=$?
expect_eq "$rc" 1 "cancelling twice is an error"
huge=$(run --flavor h100.4x --replicas 5 --duration 1h -- true)
deadline=$((SECONDS + 10)) # the reason comes from the engine's next pass
until api GET "/v1/workloads/$huge" "$ADMIN_TOKEN" && [[ "$(jq -r .reason <<<"$BODY")" == *"can never run"* ]]; do
  [ $SECONDS -lt $deadline ] || break
  sleep 0.1
done
expect_contains "$(jq -r .reason <<<"$BODY")" "can never run" "impossible work says so"

# Events and allocations tell the same story.
ev=$("${g[@]}" -o json events --workload "$timeout" -n 0 | jq -r '[.items[].type] | join(",")')
expect_eq "$ev" "submitted,admitted,running,failed" "events of the timed-out job"
closed=$(sqlite3 "$TMP/gpuaas.db" "SELECT count(*) FROM allocations WHERE workload_id IN ($ok, $timeout, $long) AND ended_ms IS NOT NULL;")
expect_eq "$closed" 3 "each finished job's allocation closed once"
stop_daemon
echo "lifecycle: ok"
