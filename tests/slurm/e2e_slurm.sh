#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The slurm backend end to end, through the daemon and the CLI, against the
# real Slurm that with-slurm.sh stood up (SLURM_CONF): a cluster whose
# endpoint is that slurm.conf, its nodes and GPUs read from Slurm (and a
# node drained there drained here);
# work runs as Slurm jobs that see the devices Slurm gave them, writes logs
# readable through the CLI, reports its exit code, is stopped at its max
# runtime (SIGTERM, then the kill), is cancelled with a grace
# period, and survives a daemon killed and restarted in the middle (running
# work re-adopted; work that ended meanwhile closed at its real end).
. "${GPUAAS_SOURCE_DIR:?}/tests/e2e/lib.sh"
: "${SLURM_CONF:?run through tests/slurm/with-slurm.sh}"

start_daemon "$TMP/gpuaas.db" --log-dir "$TMP/logs" --grace-s 1 --slurm-sync-s 1
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
# Nodes and GPUs come from Slurm's node records (gres gpu:h100:8 each).
slurm_cluster 16
expect_eq "$("${g[@]}" -o json node list | jq -r '[.items[].name] | sort | join(",")')" node1,node2 \
  "nodes from Slurm"
[ "$("${g[@]}" -o json node show node1 | jq .cpu_milli)" -gt 0 ] || fail "no CPUs from Slurm"
"${g[@]}" flavor create h100.2x --gpu-class h100 --gpu-milli 2000 --vcpus 1 --memory-mib 256 >/dev/null
"${g[@]}" flavor create h100.1x --gpu-class h100 --gpu-milli 1000 --vcpus 1 --memory-mib 256 >/dev/null
"${g[@]}" org create acme >/dev/null
"${g[@]}" project create ml --org acme >/dev/null
"${g[@]}" quota create --project ml --gpu-class h100 --limit-milli 16000 >/dev/null

w=$("${g[@]}" -o json run --project ml --flavor h100.2x -- sh -c \
  'echo "devices=$CUDA_VISIBLE_DEVICES nvidia=$NVIDIA_VISIBLE_DEVICES"; echo oops >&2; exit 3' | jq -r .id)
wait_state "$w" failed 30
api GET "/v1/workloads/$w" "$ADMIN_TOKEN"
expect_eq "$(jq -r .exit_code <<<"$BODY")" 3 "exit code"
logs=$("${g[@]}" logs "$w")
expect_contains "$logs" "devices=0,1 nvidia=0,1" "the job saw the devices Slurm gave it"
expect_contains "$logs" "oops" "stderr captured"

# Slurm refuses a submission after the engine has recorded the work running
# (sbatch answers asynchronously): it fails with Slurm's reason, its
# allocations close where they opened and nothing is billed.
part=$(sinfo -h -o %P | head -1 | tr -d '*')
scontrol update partitionname="$part" state=drain
refused=$("${g[@]}" -o json run --project ml --flavor h100.1x -- true | jq -r .id)
wait_state "$refused" failed 30
scontrol update partitionname="$part" state=up
api GET "/v1/workloads/$refused" "$ADMIN_TOKEN"
expect_contains "$(jq -r .reason <<<"$BODY")" "its backend could not start it: slurm refused it on node" \
  "the reason of work Slurm refused"
held=$(sqlite3 "$TMP/gpuaas.db" "SELECT count(*), coalesce(sum(ended_ms - started_ms), -1) FROM allocations WHERE workload_id = $refused AND ended_ms IS NOT NULL")
expect_eq "$held" "1|0" "the refused work's allocation: closed, zero length"
expect_eq "$(sqlite3 "$TMP/gpuaas.db" "SELECT count(*) FROM usage_records WHERE workload_id = $refused")" 0 \
  "usage of work Slurm refused"
grep -q 'msg="could not launch workload" workload='"$refused" "$DAEMON_LOG" || fail "the refusal was not logged"

# Cancel: SIGTERM to the job, SIGKILL to what ignores it after the 1 s grace.
stuck=$("${g[@]}" -o json run --project ml --flavor h100.1x -- sh -c "trap 'echo term' TERM; echo started; while :; do sleep 0.05; done" | jq -r .id)
wait_state "$stuck" running 30
for _ in $(seq 100); do
  grep -q started "$TMP/logs/$stuck.log" 2>/dev/null && break
  sleep 0.1
done
"${g[@]}" cancel "$stuck" >/dev/null
wait_state "$stuck" cancelled 30
api GET "/v1/workloads/$stuck" "$ADMIN_TOKEN"
# (The CLI's command runs under a shell that does not trap SIGTERM: the job
# ends by that signal or, where the shell execs it, by the SIGKILL.)
[ "$(jq -r .exit_code <<<"$BODY")" -lt 0 ] || fail "cancelled work should end by a signal: $BODY"
expect_contains "$("${g[@]}" logs "$stuck")" "term" "the job got SIGTERM first"

# Max runtime: counted from Slurm's start (whole seconds), SIGTERM at 4 s (the
# shell has set its trap by then, even on a loaded machine), the kill after the
# daemon's 1 s grace; recorded failed as killed at its maximum runtime.
long_one=$("${g[@]}" -o json run --project ml --flavor h100.1x --max-runtime 4 -- sh -c \
  "trap 'echo got-term; sleep 30' TERM; echo up; while :; do sleep 0.05; done" | jq -r .id)
wait_state "$long_one" running 30
t0=$SECONDS
wait_state "$long_one" failed 30
api GET "/v1/workloads/$long_one" "$ADMIN_TOKEN"
expect_eq "$(jq -r .reason <<<"$BODY")" "killed at its maximum runtime" "the reason of work past its max runtime"
[ "$(jq -r .exit_code <<<"$BODY")" -lt 0 ] || fail "work killed at its max runtime should end by a signal: $BODY"
[ $((SECONDS - t0)) -le 14 ] || fail "max runtime 4 s took $((SECONDS - t0)) s to end the work"
expect_contains "$("${g[@]}" logs "$long_one")" "got-term" "SIGTERM came before the kill"

# Restart in the middle: one job ends while the daemon is down (held by a
# gate until then, so it is surely seen running first; it writes when it
# ended), one runs on.
hold=$TMP/hold
short=$("${g[@]}" -o json run --project ml --flavor h100.1x -- sh -c "until [ -e $TMP/go ]; do sleep 0.05; done; sleep 1; date +%s > $TMP/short-done.tmp; mv $TMP/short-done.tmp $TMP/short-done; exit 4" | jq -r .id)
long=$("${g[@]}" -o json run --project ml --flavor h100.1x -- sh -c "while [ ! -e $hold ]; do sleep 0.05; done" | jq -r .id)
wait_state "$short" running 30
wait_state "$long" running 30
kill_daemon
touch "$TMP/go"
for _ in $(seq 100); do
  [ -e "$TMP/short-done" ] && break
  sleep 0.1
done
[ -e "$TMP/short-done" ] || fail "the short job did not end while the daemon was down"
ended=$(cat "$TMP/short-done")
sleep 2
start_daemon "$TMP/gpuaas.db" --log-dir "$TMP/logs" --grace-s 1 --slurm-sync-s 1
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN") # a new port
wait_state "$short" failed 30
api GET "/v1/workloads/$short" "$ADMIN_TOKEN"
expect_eq "$(jq -r .exit_code <<<"$BODY")" 4 "exit code of work that ended while down"
end_s=$(date -d "$(jq -r .finished_at <<<"$BODY")" +%s)
[ $((end_s - ended)) -le 1 ] && [ $((ended - end_s)) -le 2 ] ||
  fail "finished_at $(jq -r .finished_at <<<"$BODY") is not when the job ended ($ended)"
[ "$(state_of "$long")" = running ] || fail "the long job should still run, is $(state_of "$long")"
touch "$hold"
wait_state "$long" succeeded 30

# Node records follow Slurm: a node drained there shows drained here, then ready again.
node_state() { "${g[@]}" -o json node show "$1" | jq -r .state; }
wait_node() { # node state seconds
  local deadline=$((SECONDS + $3))
  until [ "$(node_state "$1")" = "$2" ]; do
    [ $SECONDS -lt $deadline ] || fail "node $1 not $2 in gpuaas (is $(node_state "$1"))"
    sleep 0.2
  done
}
scontrol update nodename=node2 state=drain reason=gpuaas-test
wait_node node2 drain 20
scontrol update nodename=node2 state=resume
wait_node node2 ready 20
expect_eq "$("${g[@]}" -o json gpu list --limit 1000 | jq '.items | length')" 16 "no GPU added twice"
stop_daemon
echo "slurm e2e: ok"
