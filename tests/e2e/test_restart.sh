#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A daemon killed (SIGKILL) and restarted in the middle of a run rebuilds its
# queues and allocations from the store: running work is re-adopted, queued
# work stays queued in order, work that ended while it was down is closed
# with its real end time, and no allocation is lost, duplicated or closed
# twice.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sim_setup.sh"

start_daemon "$TMP/gpuaas.db" --sim-fleet "$FLEET" --grace-s 1
setup_teams

# Durations leave the checks before the crash seconds of room on a loaded machine.
short=$(submit "$PROJECT_B" "$FLAVOR_4X" opportunistic 4)    # ends while the daemon is down
long=$(submit "$PROJECT_B" "$FLAVOR_4X" opportunistic 30)    # still running after restart
for i in 1 2; do submit "$PROJECT_A" "$FLAVOR_4X" opportunistic 8 >/dev/null; done
queued=$(submit "$PROJECT_A" "$FLAVOR_4X" opportunistic 3)   # 16 GPUs taken: waits
wait_state "$short" running
wait_state "$long" running
[ "$(state_of "$queued")" = queued ] || fail "fifth 4-GPU job should wait, is $(state_of "$queued")"
api GET "/v1/workloads/$short" "$ADMIN_TOKEN"
short_started=$(jq -r .started_at <<<"$BODY")

kill_daemon
sleep 6 # past the short job's end; a close at the restart would be 6 s after its start
start_daemon "$TMP/gpuaas.db" --sim-fleet "$FLEET" --grace-s 1

# The short job ended while the daemon was down: closed at its real end.
wait_state "$short" succeeded 10
api GET "/v1/workloads/$short" "$ADMIN_TOKEN"
finished=$(jq -r .finished_at <<<"$BODY")
[ "$(date -d "$finished" +%s)" -le "$(($(date -d "$short_started" +%s) + 5))" ] ||
  fail "short job closed at restart ($finished), not at its end (started $short_started + 4 s)"
[ "$(state_of "$long")" = running ] || fail "long job not re-adopted: $(state_of "$long")"
# The queued job runs once capacity frees up.
wait_state "$queued" running 15

# Every allocation: one per GPU per run, each closed at most once, never before it started.
# One read gives both the allocations and the state: work may end between two reads.
sqlite3 "$TMP/gpuaas.db" "SELECT a.workload_id, count(*), sum(a.ended_ms IS NULL), w.state \
  FROM allocations a JOIN workloads w ON w.id = a.workload_id GROUP BY a.workload_id;" >"$TMP/alloc"
while IFS='|' read -r wid n open st; do
  [ "$n" = 4 ] || fail "workload $wid has $n allocations, not 4 (one per GPU)"
  if [ "$st" = running ]; then want=4; else want=0; fi
  [ "$open" = "$want" ] || fail "workload $wid ($st) has $open open allocations, want $want"
done <"$TMP/alloc"
bad=$(sqlite3 "$TMP/gpuaas.db" "SELECT count(*) FROM allocations WHERE ended_ms < started_ms;")
expect_eq "$bad" 0 "allocations ending before they start"
# No GPU is held twice at once.
overlap=$(sqlite3 "$TMP/gpuaas.db" "SELECT count(*) FROM allocations x JOIN allocations y \
  ON x.gpu_id = y.gpu_id AND x.id < y.id \
  AND x.started_ms < COALESCE(y.ended_ms, 9e18) AND y.started_ms < COALESCE(x.ended_ms, 9e18) \
  AND x.milli + y.milli > 1000;")
expect_eq "$overlap" 0 "GPUs held by two workloads at once"

# The usage ledger: every closed run is in it exactly once, to the ms, across the crash,
# and its hash chain is whole.
sqlite3 "$TMP/gpuaas.db" "SELECT r.workload_id, r.held, COALESCE(u.metered, 0) FROM \
  (SELECT workload_id, sum(e - s) AS held FROM (SELECT workload_id, started_ms AS s, \
     max(ended_ms) AS e FROM allocations GROUP BY workload_id, started_ms \
     HAVING sum(ended_ms IS NULL) = 0) GROUP BY workload_id) r \
  LEFT JOIN (SELECT workload_id, sum(ended_ms - started_ms) AS metered FROM usage_records \
     GROUP BY workload_id) u ON u.workload_id = r.workload_id;" >"$TMP/metered"
[ -s "$TMP/metered" ] || fail "no closed runs to compare with the ledger"
while IFS='|' read -r wid held metered; do
  [ "$held" = "$metered" ] || fail "workload $wid held its GPUs $held ms, the ledger has $metered ms"
done <"$TMP/metered"
out=$("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN" usage verify) || fail "usage verify: $out"
expect_contains "$out" "ledger ok" "usage verify after a crash"
stop_daemon
echo "restart: ok"
