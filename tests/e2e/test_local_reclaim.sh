#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The local backend with real processes: owned (P1) work of the team that owns
# the GPUs reclaims them from another team's opportunistic (P2) processes,
# which get SIGTERM, the grace, and are requeued; then the daemon is killed
# (SIGKILL) with processes running and one finishing while it is down: after
# the restart the running one is re-adopted (same process, still running),
# the finished one is closed with its real end and exit code (its keeper
# wrote them), and the usage ledger has every run exactly once.
. "$(dirname "$0")/lib.sh"

mark=$MARK # in every command line we start, so pgrep finds only ours
kill_marked_on_exit
start_daemon "$TMP/gpuaas.db" --log-dir "$TMP/logs" --grace-s 1
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
"${g[@]}" cluster create here --backend local >/dev/null
"${g[@]}" gpu-class create h100 >/dev/null
"${g[@]}" node create this-host --cluster here >/dev/null
for i in 0 1; do
  "${g[@]}" gpu create --node this-host --index $i --gpu-class h100 --uuid "GPU-aaaa000$i" >/dev/null
done
"${g[@]}" flavor create h100.1x --gpu-class h100 --gpu-milli 1000 >/dev/null
owners_and_guests here 2000

# Two guests' P2 processes take both GPUs; they leave a file when told to stop.
for n in 1 2; do
  guest[$n]=$("${g[@]}" -o json run --project guests --flavor h100.1x -- sh -c \
    "trap 'touch $TMP/term-$n; exit 143' TERM; echo \$CUDA_VISIBLE_DEVICES > $TMP/dev-$n; while :; do sleep 0.1; done # $mark-g$n" | jq -r .id)
done
for n in 1 2; do wait_state "${guest[$n]}" running 10; done
# Running means started: wait until each shell has set its trap (it writes dev-N after).
for _ in $(seq 100); do [ -e "$TMP/dev-1" ] && [ -e "$TMP/dev-2" ] && break; sleep 0.1; done
[ "$(pgrep -fc "$mark-g")" -ge 2 ] || fail "the guests' processes are not running"

# The owners need both their GPUs back.
own=$("${g[@]}" -o json run --project owners --flavor h100.1x --replicas 2 --owned -- sh -c \
  "echo \$CUDA_VISIBLE_DEVICES >> $TMP/own-devs; sleep 30 # $mark-own" | jq -r .id)
wait_state "$own" running 15
for n in 1 2; do
  [ -e "$TMP/term-$n" ] || fail "guest $n was not sent SIGTERM"
  expect_eq "$(state_of "${guest[$n]}")" queued "guest $n requeued in its place"
done
pgrep -f "$mark-g" >/dev/null && fail "a guest process survived the reclaim"
expect_eq "$(sort "$TMP/own-devs" | tr '\n' ' ')" "GPU-aaaa0000 GPU-aaaa0001 " "the owners' replicas' devices"
api GET "/v1/preemptions" "$ADMIN_TOKEN"
expect_eq "$(jq '.items | length' <<<"$BODY")" 1 "one preemption in the ledger"
[ "$(jq '.items[0].released_ms' <<<"$BODY")" != null ] || fail "the reclaim never completed"

# Kill the daemon with the owners' work running; a short job finishes while it
# is down (held by a gate until then, so it is surely seen running first).
"${g[@]}" cancel "$own" >/dev/null
wait_state "$own" cancelled 10
long=$("${g[@]}" -o json run --project owners --flavor h100.1x --owned -- sh -c "sleep 30 # $mark-long" | jq -r .id)
short=$("${g[@]}" -o json run --project owners --flavor h100.1x --owned -- sh -c "until [ -e $TMP/go ]; do sleep 0.05; done; sleep 1; exit 7 # $mark-short" | jq -r .id)
wait_state "$long" running 10
wait_state "$short" running 10
pid_before=$(pgrep -f "$mark-long" | head -1)
kill_daemon
go_ms=$(date +%s%3N)
touch "$TMP/go"
sleep 3
start_daemon "$TMP/gpuaas.db" --log-dir "$TMP/logs" --grace-s 1
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN") # a new port
wait_state "$short" failed 10
api GET "/v1/workloads/$short" "$ADMIN_TOKEN"
expect_eq "$(jq -r .exit_code <<<"$BODY")" 7 "the real exit code of work that ended while down"
[ "$(state_of "$long")" = running ] || fail "the long job was not re-adopted: $(state_of "$long")"
expect_eq "$(pgrep -f "$mark-long" | head -1)" "$pid_before" "the same process, not a new one"
# The short run's end is when it really ended (about 1 s after its gate
# opened), not the restart (3 s after).
sqlite3 "$TMP/gpuaas.db" "SELECT max(ended_ms) - $go_ms FROM allocations WHERE workload_id = $short" >"$TMP/held"
[ "$(cat "$TMP/held")" -lt 2500 ] || fail "short run ended $(cat "$TMP/held") ms after its gate: closed at the restart, not at its end"
"${g[@]}" cancel "$long" "${guest[1]}" "${guest[2]}" >/dev/null
for w in "$long" "${guest[1]}" "${guest[2]}"; do wait_state "$w" cancelled 10; done
pgrep -f "$mark" >/dev/null && fail "a process of ours is still running"
out=$("${g[@]}" usage verify) || fail "usage verify: $out"
expect_contains "$out" "ledger ok" "the ledger after a crash with real processes"
metered=$(sqlite3 "$TMP/gpuaas.db" "SELECT count(*) FROM usage_records WHERE workload_id = $short")
expect_eq "$metered" 1 "the run that ended while the daemon was down, metered once"
stop_daemon
echo "local reclaim and restart: ok"
