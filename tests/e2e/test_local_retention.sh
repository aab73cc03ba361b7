#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Log retention on a local cluster (log-retention-days): real work runs and
# ends; a workload that ended two days ago comes in through the history
# import the daemon offers (POST /v1/history: the retention counts from the
# end the store records), with a log and run file in log-dir as the local
# backend names them; the daemon is stopped with other work still running
# and started again, which sweeps log-dir. The old workload's log and run
# file are gone, with a logs-removed event, and its logs answer 410 with
# when and why (the CLI says so too); the running workload's files (the run
# file a restarted daemon adopts it by), a recently ended one's, a directory
# with one of our names and files that are not ours stay. The test never
# writes the store.
. "$(dirname "$0")/lib.sh"

mark=$MARK # in every command line we start, so pgrep finds only ours
kill_marked_on_exit

logs=$TMP/logs
flags=(--local-gpus "h100:2" --log-dir "$logs" --log-retention-days 1 --grace-s 1)
start_daemon "$TMP/gpuaas.db" "${flags[@]}"
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
"${g[@]}" cluster create here --backend local >/dev/null
flavor=$("${g[@]}" -o json flavor create h100.1x --gpu-class h100 --gpu-milli 1000 | jq -r .id)
"${g[@]}" org create acme >/dev/null
project=$("${g[@]}" -o json project create ml --org acme | jq -r .id)
"${g[@]}" quota create --project ml --gpu-class h100 --limit-milli 2000 >/dev/null
deadline=$((SECONDS + 15))
until [ "$("${g[@]}" -o json gpu list | jq '.items | length')" = 2 ]; do
  [ $SECONDS -lt $deadline ] || fail "the declared GPUs did not appear"
  sleep 0.2
done

# Work that ended two days ago, imported before any usage of the flavor (its price
# version may start in the past only then).
at() { date -u -d "@$(($(date +%s) - $1))" +%Y-%m-%dT%H:%M:%SZ; }
jq -n --argjson f "$flavor" --argjson p "$project" --arg from "$(at 259200)" \
  --arg start "$(at 176400)" --arg fin "$(at 172800)" \
  '{prices: [{flavor_id: $f, currency: "EUR", price_per_hour_micros: 1000000,
              effective_from: $from}],
    workloads: [{project_id: $p, flavor_id: $f, name: "old", started_at: $start,
                 finished_at: $fin}]}' >"$TMP/history.json"
"${g[@]}" history import "$TMP/history.json" >/dev/null || fail "history import"
api GET "/v1/workloads?imported=true" "$ADMIN_TOKEN"
old=$(jq -r '.items[0].id' <<<"$BODY")
[ -n "$old" ] && [ "$old" != null ] || fail "the imported workload is not listed"
recent=$("${g[@]}" -o json run --project ml --flavor h100.1x -- sh -c "echo output-of-recent # $mark" | jq -r .id)
wait_state "$recent" succeeded 15
long=$("${g[@]}" -o json run --project ml --flavor h100.1x -- sh -c "echo started; sleep 60 # $mark-long" | jq -r .id)
wait_state "$long" running 15
# Its files, as the local backend names them (what it wrote is the retention's business).
echo output-of-old >"$logs/$old.log"
cp "$logs/$recent.0.run" "$logs/$old.0.run"
for f in "$old.log" "$old.0.run" "$recent.log" "$recent.0.run" "$long.0.run"; do
  [ -f "$logs/$f" ] || fail "no $f in log-dir: $(ls "$logs")"
done
expect_contains "$("${g[@]}" logs "$old")" output-of-old "the log before the retention"

# What is not ours stays, whatever its age: other names, a directory with one of our names.
echo keep >"$logs/notes.txt"
cp "$logs/$old.log" "$logs/$old.log.bak"
echo keep >"$logs/0$old.log"
echo keep >"$logs/999999.log" # a workload this store does not know
mkdir "$logs/$old.7.run"

stop_daemon
pgrep -f "$mark-long" >/dev/null || fail "the long job did not outlive the daemon"
start_daemon "$TMP/gpuaas.db" "${flags[@]}"
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN") # a new port

# The sweep at start; its line comes once it has read all of log-dir.
deadline=$((SECONDS + 30))
until grep -q 'msg="log retention sweep done"' "$DAEMON_LOG"; do
  [ $SECONDS -lt $deadline ] || fail "no log retention sweep after the restart"
  sleep 0.1
done
line=$(grep 'msg="log retention sweep done"' "$DAEMON_LOG")
expect_contains "$line" "removed=2 workloads=1" "what the sweep says it removed"

[ ! -e "$logs/$old.log" ] || fail "the old workload's log is still there"
[ ! -e "$logs/$old.0.run" ] || fail "the old workload's run file is still there"
for f in "$recent.log" "$recent.0.run" "$long.log" "$long.0.run" notes.txt "$old.log.bak" \
  "0$old.log" 999999.log; do
  [ -f "$logs/$f" ] || fail "$f was removed"
done
[ -d "$logs/$old.7.run" ] || fail "a directory named like a run file was removed"

# The API says the log is gone, when, and why; the CLI prints it and fails.
api GET "/v1/workloads/$old/logs" "$ADMIN_TOKEN"
expect_eq "$HTTP_STATUS" 410 "status of a removed log"
expect_eq "$(jq -r .error.code <<<"$BODY")" gone "error code of a removed log"
msg=$(jq -r .error.message <<<"$BODY")
expect_contains "$msg" "workload $old: log removed at " "the message"
expect_contains "$msg" "logs are kept 1 day after work ends" "the message says why"
rc=0
"${g[@]}" logs "$old" >"$TMP/cli.out" 2>"$TMP/cli.err" || rc=$?
[ $rc -ne 0 ] || fail "gpuaas logs of a removed log succeeded"
expect_contains "$(cat "$TMP/cli.err")" "log removed at " "gpuaas logs says the log was removed"
api GET "/v1/events?workload_id=$old&type=logs-removed" "$ADMIN_TOKEN"
expect_eq "$(jq '.items | length' <<<"$BODY")" 1 "one logs-removed event"
expect_eq "$(jq -r '.items[0].message' <<<"$BODY")" "log removed: logs are kept 1 day after work ends" \
  "the event's message"

# The others read as before; the long job was adopted again by its run file.
expect_contains "$("${g[@]}" logs "$recent")" output-of-recent "a recent log"
expect_eq "$(state_of "$long")" running "the long job after the restart"
expect_contains "$("${g[@]}" logs "$long")" started "the running job's log"
"${g[@]}" cancel "$long" >/dev/null
wait_state "$long" cancelled 15
pgrep -f "$mark-long" >/dev/null && fail "the long job survived its cancel"
stop_daemon
echo "local log retention: ok"
