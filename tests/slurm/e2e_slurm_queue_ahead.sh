#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Queue-ahead on Slurm, end to end, on a one-node Slurm (8 GPUs) that
# with-slurm.sh stood up, with gpuaasd's slurm-queue-ahead on. While work R
# runs as a Slurm job, the head of gpuaas' queue, work S of the same project
# and flavor, is submitted to Slurm ahead of time: pinned to R's node, with
# R's GPUs' count, held by --dependency=afterany:<R's job>. S stays queued in
# gpuaas with queued_after = R ("queued in Slurm behind workload R", event
# "staged") and Slurm starts it the moment R ends, on R's GPUs. Then:
#   1. S runs at R's end: events staged, admitted, running, succeeded; its
#      allocations on R's GPU rows, opened when R's closed; no GPU held twice.
#   1b. Two deep and no deeper: a third waits in gpuaas until the first has
#      ended, then behind the second; all on the first one's GPUs, each from
#      the end of the one before.
#   1c. The node drained in Slurm: what waits there, a chain of two, is taken
#      back (event "unstaged", the jobs cancelled) and runs as usual once the
#      node is back.
#   1d. Another project's work waits for the class: what is queued ahead is
#      taken back ("other work now waits"), the scheduler decides, both run.
#   1e. Work of the same project with a higher priority: what is queued ahead
#      is taken back, the new one is queued ahead instead (the other behind
#      it) and runs first.
#   2. A staged S cancelled: it ends cancelled, its pending Slurm job is
#      cancelled and its command never runs; what was queued behind it is
#      taken back and runs once, later.
#   3. gpuaasd killed (SIGKILL) and restarted while S is staged behind R and
#      S2 behind S: both still queued behind theirs, still one Slurm job
#      each, and each runs once, on R's GPUs.
#   4. R borrowed (P2) and reclaimed by the owners' P1 work: S is taken back
#      first (event "unstaged", its Slurm job cancelled), R is preempted, the
#      P1 work runs, then S runs as usual.
#   5. Every allocation closed, each run metered once, the ledger verifies.
# The running work waits for a file the test creates (at most about a
# minute), so it ends exactly when the test is done looking at what is staged
# behind it; every run lasts over a second (a run that ends within its
# start's second is zero long, which the usage ledger does not record).
. "${GPUAAS_SOURCE_DIR:?}/tests/e2e/lib.sh"
: "${SLURM_CONF:?run through tests/slurm/with-slurm.sh}"

grace_s=5
daemon_flags=(--log-dir "$TMP/logs" --grace-s "$grace_s" --slurm-sync-s 1 --slurm-queue-ahead=1)
start_daemon "$TMP/gpuaas.db" "${daemon_flags[@]}"
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
slurm_cluster 8
# One workload of this flavor takes the whole node.
"${g[@]}" flavor create h100.8x --gpu-class h100 --gpu-milli 8000 --vcpus 1 --memory-mib 256 >/dev/null
owners_and_guests sl 8000

db() { sqlite3 "$TMP/gpuaas.db" "$@"; }

# Jobs are named gpuaas-<daemon: 8 hex digits>-<workload id>. jobs_of W: the
# ids of every Slurm job of W (ended ones too), one a line, oldest first.
jobs_of() {
  squeue -h -t all -o '%i %j' | { grep -E " gpuaas-[0-9a-f]{8}-$1\$" || true; } | cut -d' ' -f1 | sort -n
}
job_of() { jobs_of "$1" | tail -1; }
all_jobs() { squeue -h -t all -o '%i %j %T %r %E'; }
# slurm_job JOB FORMAT: squeue's answer about JOB (empty once Slurm forgot it).
slurm_job() { squeue -h -t all -j "$1" -o "$2" 2>/dev/null || true; }

# submit PROJECT [run flags...] -- COMMAND: the new workload's id.
submit() {
  local project=$1
  shift
  "${g[@]}" -o json run --project "$project" --flavor h100.8x "$@" | jq -r .id
}
# held NAME: a command that prints NAME-start, runs until the test creates
# $TMP/release-NAME (at most about a minute), then prints NAME-end.
held() {
  echo "echo $1-start; sleep 1.2; n=0; while [ ! -e $TMP/release-$1 ] && [ \$n -lt 1200 ]; do sleep 0.05; n=\$((n + 1)); done; echo $1-end"
}
release() { touch "$TMP/release-$1"; }

# wait_log W TEXT: waits until W's log has TEXT (so its Slurm job runs).
wait_log() {
  local deadline=$((SECONDS + 20))
  until grep -q -- "$2" "$TMP/logs/$1.log" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || fail "workload $1 never printed '$2': $(ls "$TMP/logs"; all_jobs)"
    sleep 0.1
  done
}
# wait_held W NAME: W (running held NAME) runs, and its command has started.
wait_held() {
  wait_state "$1" running 30
  wait_log "$1" "$2-start"
}
# marker_count W TEXT: how many lines of W's log are TEXT (0 without a log).
marker_count() {
  if [ -f "$TMP/logs/$1.log" ]; then grep -cx -- "$2" "$TMP/logs/$1.log" || true; else echo 0; fi
}

# queued_after_of W: W's queued_after (null when it is not staged).
queued_after_of() {
  api GET "/v1/workloads/$1" "$ADMIN_TOKEN"
  jq -r .queued_after <<<"$BODY"
}
# wait_staged S R: waits (10 s at most) until S is queued in Slurm behind R:
# still queued in gpuaas, queued_after R, that reason, a "staged" event.
wait_staged() {
  local deadline=$((SECONDS + 10))
  while api GET "/v1/workloads/$1" "$ADMIN_TOKEN"; [ "$(jq -r .queued_after <<<"$BODY")" != "$2" ]; do
    [ "$(jq -r .state <<<"$BODY")" = queued ] ||
      fail "workload $1 left the queue before it was queued in Slurm behind workload $2: $BODY"
    [ $SECONDS -lt $deadline ] ||
      fail "workload $1 not queued in Slurm behind workload $2 in 10 s (queued_after$(jq -r \
        'if has("queued_after") then "" else ": no such field" end' <<<"$BODY")): $BODY; Slurm: $(all_jobs)"
    sleep 0.2
  done
  expect_eq "$(jq -r .state <<<"$BODY")" queued "the state of workload $1, staged behind $2"
  expect_contains "$(jq -r .reason <<<"$BODY")" "queued in Slurm behind workload $2" \
    "the reason of workload $1, staged behind $2"
  expect_contains ",$(event_types "$1")," ",staged," "the events of workload $1, staged behind $2"
}
# wait_job W: waits (5 s at most) until W has a Slurm job; sets JOB to its
# newest. (Work is recorded staged when its sbatch starts, which may still run.)
wait_job() {
  local deadline=$((SECONDS + 5))
  until JOB=$(job_of "$1") && [ -n "$JOB" ]; do
    [ $SECONDS -lt $deadline ] || fail "no Slurm job for workload $1: $(all_jobs)"
    sleep 0.1
  done
}
# check_slurm_staged S R: S has one Slurm job, PENDING on its dependency on
# R's job, pinned to R's node with the flavor's 8 GPUs; sets STAGED_JOB.
check_slurm_staged() {
  local rjob sjobs deadline=$((SECONDS + 5))
  wait_job "$2"
  rjob=$JOB
  wait_job "$1"
  sjobs=$(jobs_of "$1")
  [ "$(wc -l <<<"$sjobs")" = 1 ] || fail "workload $1 has more than one Slurm job: $(all_jobs)"
  STAGED_JOB=$sjobs
  until [ "$(slurm_job "$STAGED_JOB" '%T %r')" = "PENDING Dependency" ]; do
    [ $SECONDS -lt $deadline ] ||
      fail "workload $1's Slurm job $STAGED_JOB is not PENDING on Dependency: $(all_jobs)"
    sleep 0.2
  done
  expect_contains "$(slurm_job "$STAGED_JOB" %E)" "afterany:$rjob" \
    "the dependency of workload $1's Slurm job (on workload $2's job $rjob)"
  expect_eq "$(slurm_job "$STAGED_JOB" %n)" "$(slurm_job "$rjob" %N)" \
    "the nodes workload $1's Slurm job asks for (workload $2's)"
  [[ "$(slurm_job "$STAGED_JOB" %b)" =~ gpu[:/]h100[:=]8$ ]] ||
    fail "workload $1's Slurm job should ask for gpu:h100:8: $(slurm_job "$STAGED_JOB" %b)"
}
# wait_slurm_staged S R: wait_staged, then check_slurm_staged (sets STAGED_JOB).
wait_slurm_staged() {
  wait_staged "$1" "$2"
  check_slurm_staged "$1" "$2"
}
# wait_unstaged W WHY: waits (15 s at most) until W is taken back from
# Slurm's queue: queued_after null, an "unstaged" event whose message has WHY.
wait_unstaged() {
  local deadline=$((SECONDS + 15))
  until [ "$(queued_after_of "$1")" = null ]; do
    [ $SECONDS -lt $deadline ] || fail "workload $1 still queued in Slurm ($2): $BODY"
    sleep 0.2
  done
  expect_contains "$(jq -r .reason <<<"$BODY")" queued "workload $1's reason, taken back"
  expect_contains "$("${g[@]}" -o json events --workload "$1" -n 0 |
    jq -r '.items[] | select(.type == "unstaged") | .message')" "$2" "why workload $1 was taken back"
}
# wait_slurm_gone JOB WHAT: waits (5 s at most) until Slurm's JOB is cancelled or forgotten.
wait_slurm_gone() {
  local deadline=$((SECONDS + 5)) st
  while :; do
    st=$(slurm_job "$1" %T)
    case "$st" in "" | CANCELLED) return 0 ;; esac
    [ $SECONDS -lt $deadline ] || fail "$2: Slurm job $1 is $st, not cancelled: $(all_jobs)"
    sleep 0.2
  done
}

event_types() { "${g[@]}" -o json events --workload "$1" -n 0 | jq -r '[.items[].type] | join(",")'; }
# events_among W TYPES: W's events of these types (comma-separated), in time order.
events_among() {
  "${g[@]}" -o json events --workload "$1" -n 0 |
    jq -r --arg want "$2" '($want | split(",")) as $w | [.items[].type | select(. as $t | any($w[]; . == $t))] | join(",")'
}
# gpus_of W: the GPU rows of W's allocations, sorted, comma-separated.
gpus_of() {
  db "SELECT group_concat(gpu_id, ',') FROM (SELECT gpu_id FROM allocations WHERE workload_id = $1 ORDER BY gpu_id)"
}
# alloc_times W started_ms|ended_ms: the distinct values of that column of W's allocations.
alloc_times() {
  db "SELECT group_concat(v, ',') FROM (SELECT DISTINCT $2 AS v FROM allocations WHERE workload_id = $1)"
}
# check_no_overlap WHEN: no two allocations held one GPU at the same time.
check_no_overlap() {
  local pairs
  pairs=$(db "SELECT a.workload_id || '/' || b.workload_id || ' on GPU ' || a.gpu_id FROM allocations a
    JOIN allocations b ON a.gpu_id = b.gpu_id AND a.id < b.id
    WHERE a.started_ms < coalesce(b.ended_ms, 9223372036854775807)
      AND b.started_ms < coalesce(a.ended_ms, 9223372036854775807)")
  [ -z "$pairs" ] || fail "allocations overlap in time on one GPU ($1): $pairs"
}

# 1. B is queued in Slurm behind A, and Slurm starts it on A's GPUs as A ends.
A=$(submit owners -- sh -c "$(held A)")
B=$(submit owners -- sh -c 'echo B-ran; sleep 1.2')
wait_held "$A" A
expect_eq "$(slurm_job "$(job_of "$A")" %T)" RUNNING "workload A's Slurm job"
wait_slurm_staged "$B" "$A"
b_job=$STAGED_JOB
api GET "/v1/workloads/$A" "$ADMIN_TOKEN"
expect_eq "$(jq -r .queued_after <<<"$BODY")" null "queued_after of running workload A"
expect_eq "$(marker_count "$B" B-ran)" 0 "B's marker while it is staged"
release A
wait_state "$A" succeeded 20
wait_state "$B" succeeded 20
expect_eq "$(queued_after_of "$B")" null "queued_after of workload B once it ran"
expect_eq "$(events_among "$B" submitted,staged,unstaged,admitted,running,succeeded)" \
  "submitted,staged,admitted,running,succeeded" "workload B's events, in time order"
expect_eq "$(event_types "$B" | cut -d, -f1)" submitted "workload B's first event"
expect_eq "$(jobs_of "$B")" "$b_job" "workload B's Slurm jobs (the one staged)"
expect_eq "$(slurm_job "$b_job" '%T %N')" "COMPLETED $(slurm_job "$(job_of "$A")" %N)" \
  "workload B's Slurm job, on A's node"
expect_eq "$(marker_count "$B" B-ran)" 1 "B-ran lines in B's log"
a_gpus=$(gpus_of "$A")
expect_eq "$(db "SELECT count(*) FROM allocations WHERE workload_id = $A")" 8 "workload A's allocations"
expect_eq "$(gpus_of "$B")" "$a_gpus" "workload B's GPU rows (A's)"
a_end=$(alloc_times "$A" ended_ms)
b_start=$(alloc_times "$B" started_ms)
[[ "$a_end" =~ ^[0-9]+$ ]] || fail "workload A's allocations should end at one time: '$a_end'"
expect_eq "$b_start" "$a_end" "workload B's allocations' start (A's allocations' end)"
check_no_overlap "after B"

# 1b. Two deep, and no deeper: B1 waits behind A1 and B2 behind B1; B3 waits
# in gpuaas until A1 ends (B2 is then one deep), then behind B2. Each runs on
# A1's GPUs from the end of the one before.
A1=$(submit owners -- sh -c "$(held A1)")
B1=$(submit owners -- sh -c "$(held B1)")
B2=$(submit owners -- sh -c 'echo B2-ran; sleep 1.2')
B3=$(submit owners -- sh -c 'echo B3-ran; sleep 1.2')
wait_held "$A1" A1
wait_staged "$B1" "$A1"
wait_staged "$B2" "$B1"
api GET "/v1/workloads/$B1" "$ADMIN_TOKEN"
expect_eq "$(jq -r .queue_position <<<"$BODY")" 1 "queue position of B1 (next on A1's GPUs)"
api GET "/v1/workloads/$B2" "$ADMIN_TOKEN"
expect_eq "$(jq -r .queue_position <<<"$BODY")" 2 "queue position of B2 (after B1)"
wait_job "$B2"
expect_contains "$(slurm_job "$(job_of "$B2")" %E)" "afterany:$(job_of "$B1")" \
  "the dependency of workload B2's Slurm job (on B1's)"
sleep 1 # a third would have been staged by now
expect_eq "$(queued_after_of "$B3")" null "queued_after of B3 while two wait ahead of it"
expect_eq "$(jobs_of "$B3")" "" "B3's Slurm jobs while two wait ahead of it"
release A1
wait_log "$B1" B1-start
wait_state "$B1" running 20
wait_staged "$B3" "$B2"
expect_eq "$(state_of "$B2")" queued "workload B2 while B1 runs"
release B1
wait_state "$B2" succeeded 30
wait_state "$B3" succeeded 30
a1_gpus=$(gpus_of "$A1")
for w in "$B1" "$B2" "$B3"; do
  expect_eq "$(gpus_of "$w")" "$a1_gpus" "workload $w's GPU rows (A1's)"
done
expect_eq "$(alloc_times "$B1" started_ms)" "$(alloc_times "$A1" ended_ms)" "B1's start (A1's end)"
expect_eq "$(alloc_times "$B2" started_ms)" "$(alloc_times "$B1" ended_ms)" "B2's start (B1's end)"
expect_eq "$(alloc_times "$B3" started_ms)" "$(alloc_times "$B2" ended_ms)" "B3's start (B2's end)"
for w in B2 B3; do
  id=${!w}
  expect_eq "$(marker_count "$id" "$w-ran")" 1 "$w-ran lines in $w's log"
done
check_no_overlap "after the chain"

# 1c. The node drained in Slurm: what waits there is taken back (Slurm would
# not start it), the whole chain, and runs later as usual once the node is back.
G=$(submit owners -- sh -c "$(held G)")
H=$(submit owners -- sh -c 'echo H-ran; sleep 1.2')
H2=$(submit owners -- sh -c 'echo H2-ran; sleep 1.2')
wait_held "$G" G
wait_slurm_staged "$H" "$G"
h_job=$STAGED_JOB
wait_staged "$H2" "$H"
wait_job "$H2"
h2_job=$JOB
scontrol update nodename="$(slurm_job "$(job_of "$G")" %N)" state=drain reason=queue-ahead-test
wait_unstaged "$H" "its node is not ready"
wait_unstaged "$H2" "its node is not ready"
expect_contains ",$(event_types "$H")," ",staged,unstaged," "workload H's events"
wait_slurm_gone "$h_job" "workload H, its node drained"
wait_slurm_gone "$h2_job" "workload H2, queued behind H on the drained node"
scontrol update nodename="$(slurm_job "$(job_of "$G")" %N)" state=resume
release G
wait_state "$G" succeeded 20
wait_state "$H" succeeded 40
wait_state "$H2" succeeded 40
expect_eq "$(marker_count "$H" H-ran)" 1 "H-ran lines in H's log"
expect_eq "$(marker_count "$H2" H2-ran)" 1 "H2-ran lines in H2's log"
check_no_overlap "after the drain"

# 1d. Another project's work starts waiting for the class: what is queued
# ahead is taken back, and the scheduler decides who runs next.
K=$(submit guests -- sh -c "$(held K)")
L=$(submit guests -- sh -c 'echo L-ran; sleep 1.2')
wait_held "$K" K
wait_slurm_staged "$L" "$K"
l_job=$STAGED_JOB
# O opportunistic: as automatic (owned) work it would take back its pool from K instead.
O=$(submit owners --opportunistic -- sh -c 'echo O-ran; sleep 1.2')
wait_unstaged "$L" "other work now waits"
wait_slurm_gone "$l_job" "workload L, taken back"
expect_eq "$(state_of "$O")" queued "the other project's workload O while K runs"
release K
wait_state "$O" succeeded 40
wait_state "$L" succeeded 40
expect_eq "$(marker_count "$L" L-ran)" 1 "L-ran lines in L's log"
check_no_overlap "after another project came"

# 1e. Work of the same project that comes first (a higher priority) starts
# waiting: what is queued ahead is taken back, the new one is queued ahead in
# its place (and the one taken back behind it, two deep) and runs first.
M=$(submit guests -- sh -c "$(held M)")
N=$(submit guests -- sh -c 'echo N-ran; sleep 1.2')
wait_held "$M" M
wait_slurm_staged "$N" "$M"
n_job=$STAGED_JOB
P=$(submit guests --priority 5 -- sh -c 'echo P-ran; sleep 1.2')
wait_staged "$P" "$M"
wait_staged "$N" "$P"
expect_eq "$(events_among "$N" staged,unstaged)" staged,unstaged,staged "workload N's events"
expect_contains "$("${g[@]}" -o json events --workload "$N" -n 0 |
  jq -r '.items[] | select(.type == "unstaged") | .message')" \
  "work of its project that comes first" "why workload N was taken back"
wait_slurm_gone "$n_job" "workload N, taken back"
deadline=$((SECONDS + 10)) # (its new sbatch may still be running)
while [ "$(job_of "$N")" = "$n_job" ]; do
  [ $SECONDS -lt $deadline ] || fail "workload N should be queued in Slurm with a new job: $(all_jobs)"
  sleep 0.2
done
release M
wait_state "$P" succeeded 40
wait_state "$N" succeeded 40
expect_eq "$(marker_count "$N" N-ran)" 1 "N-ran lines in N's log"
[ "$(alloc_times "$P" started_ms)" -lt "$(alloc_times "$N" started_ms)" ] ||
  fail "workload P (priority 5) should run before N, which was queued ahead before it came"
check_no_overlap "after higher-priority work came"

# 2. A staged D cancelled: its pending Slurm job goes, its command never
# runs; D2, queued behind D, is taken back (its job would start once D's is
# cancelled) and runs once, later.
C=$(submit owners -- sh -c "$(held C)")
D=$(submit owners -- sh -c 'echo D-ran; sleep 1.2')
D2=$(submit owners -- sh -c 'echo D2-ran; sleep 1.2')
wait_held "$C" C
wait_slurm_staged "$D" "$C"
d_job=$STAGED_JOB
wait_staged "$D2" "$D"
wait_job "$D2"
d2_job=$JOB
"${g[@]}" cancel "$D" >/dev/null
wait_state "$D" cancelled 10
wait_slurm_gone "$d_job" "workload D, cancelled while staged"
wait_slurm_gone "$d2_job" "workload D2, queued behind cancelled D"
expect_contains "$("${g[@]}" -o json events --workload "$D2" -n 0 |
  jq -r '.items[] | select(.type == "unstaged") | .message')" \
  "the workload it waited for was cancelled" "why workload D2 was taken back"
expect_eq "$(queued_after_of "$D")" null "queued_after of cancelled workload D"
expect_eq "$(state_of "$C")" running "workload C, after D was cancelled"
release C
wait_state "$C" succeeded 20
sleep 1 # what Slurm would have started at C's end would have printed by now
wait_slurm_gone "$d_job" "workload D, after C ended"
expect_eq "$(jobs_of "$D")" "$d_job" "workload D's Slurm jobs"
expect_eq "$(marker_count "$D" D-ran)" 0 "D-ran lines in cancelled workload D's log"
expect_eq "$(db "SELECT count(*) FROM allocations WHERE workload_id = $D")" 0 "cancelled workload D's allocations"
expect_eq "$(state_of "$D")" cancelled "workload D, after C ended"
wait_state "$D2" succeeded 40
expect_eq "$(marker_count "$D2" D2-ran)" 1 "D2-ran lines in D2's log"

# 3. gpuaasd killed and restarted while F is staged behind E, and F2 behind F.
E=$(submit owners -- sh -c "$(held E)")
F=$(submit owners -- sh -c 'echo F-ran; sleep 1.2')
F2=$(submit owners -- sh -c 'echo F2-ran; sleep 1.2')
wait_held "$E" E
wait_slurm_staged "$F" "$E"
f_job=$STAGED_JOB
wait_staged "$F2" "$F"
wait_job "$F2"
f2_job=$JOB
kill_daemon
sleep 1
start_daemon "$TMP/gpuaas.db" "${daemon_flags[@]}"
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN") # a new port
wait_staged "$F" "$E"
sleep 2 # a few of the restarted daemon's passes and Slurm syncs
api GET "/v1/workloads/$F" "$ADMIN_TOKEN"
expect_eq "$(jq -r .queued_after <<<"$BODY")" "$E" "queued_after of workload F, 2 s after the restart"
expect_eq "$(jq -r .state <<<"$BODY")" queued "workload F, 2 s after the restart"
expect_eq "$(jobs_of "$F")" "$f_job" "workload F's Slurm jobs after the restart (the one staged before it)"
expect_eq "$(slurm_job "$f_job" '%T %r')" "PENDING Dependency" "workload F's Slurm job after the restart"
expect_eq "$(state_of "$E")" running "workload E after the restart"
expect_eq "$(queued_after_of "$F2")" "$F" "queued_after of workload F2 after the restart"
expect_eq "$(jobs_of "$F2")" "$f2_job" "workload F2's Slurm jobs after the restart"
release E
wait_state "$E" succeeded 20
wait_state "$F" succeeded 20
wait_state "$F2" succeeded 20
expect_eq "$(marker_count "$F2" F2-ran)" 1 "F2-ran lines in F2's log"
expect_eq "$(gpus_of "$F2")" "$(gpus_of "$E")" "workload F2's GPU rows (E's)"
expect_eq "$(alloc_times "$F2" started_ms)" "$(alloc_times "$F" ended_ms)" "F2's start (F's end)"
expect_eq "$(queued_after_of "$F")" null "queued_after of workload F once it ran"
expect_eq "$(jobs_of "$F")" "$f_job" "workload F's Slurm jobs"
expect_eq "$(slurm_job "$f_job" %T)" COMPLETED "workload F's Slurm job"
expect_eq "$(marker_count "$F" F-ran)" 1 "F-ran lines in F's log"
expect_eq "$(gpus_of "$F")" "$(gpus_of "$E")" "workload F's GPU rows (E's)"
expect_eq "$(alloc_times "$F" started_ms)" "$(alloc_times "$E" ended_ms)" \
  "workload F's allocations' start (E's allocations' end)"
check_no_overlap "after the restart"

# 4. The guests' R borrows the owners' GPUs, S is staged behind it; the owners'
# P1 work takes them back: S is unstaged first, R preempted, P runs, then S.
R=$(submit guests --no-requeue -- sh -c \
  "trap 'echo got-sigterm; exit 143' TERM; echo R-start; sleep 1.2; n=0; while [ \$n -lt 1200 ]; do sleep 0.05; n=\$((n + 1)); done")
S=$(submit guests -- sh -c 'echo S-ran; sleep 1.2')
wait_held "$R" R
wait_slurm_staged "$S" "$R"
s_job=$STAGED_JOB
P=$(submit owners --owned -- sh -c 'echo P-ran; sleep 1.2')
deadline=$((SECONDS + 15))
until [ "$(events_among "$S" unstaged)" = unstaged ]; do
  [ $SECONDS -lt $deadline ] ||
    fail "workload S not unstaged when the owners' P1 work $P came: $(event_types "$S"); $(all_jobs)"
  sleep 0.2
done
wait_slurm_gone "$s_job" "workload S, unstaged"
wait_state "$R" preempted $((grace_s + 20))
api GET "/v1/workloads/$S" "$ADMIN_TOKEN"
expect_eq "$(jq -r .state <<<"$BODY")" queued "workload S, unstaged, once R was preempted: $BODY"
expect_eq "$(jq -r .queued_after <<<"$BODY")" null "queued_after of unstaged workload S"
expect_contains "$("${g[@]}" logs "$R")" got-sigterm "workload R got SIGTERM"
# S is taken back before R's job ends (else Slurm would start S on R's GPUs
# the moment R stops): its unstaged event precedes R's preempted one; its
# staged Slurm job was cancelled (above) and never ran (S-ran once, below).
unstaged_id=$(db "SELECT min(id) FROM workload_events WHERE workload_id = $S AND type = 'unstaged'")
preempted_id=$(db "SELECT min(id) FROM workload_events WHERE workload_id = $R AND type = 'preempted'")
[ -n "$unstaged_id" ] || fail "workload S has no unstaged event: $(event_types "$S")"
[ -n "$preempted_id" ] || fail "workload R has no preempted event: $(event_types "$R")"
[ "$unstaged_id" -lt "$preempted_id" ] ||
  fail "workload S was unstaged (event $unstaged_id) after R was preempted (event $preempted_id)"
wait_state "$P" succeeded 30
expect_contains "$("${g[@]}" logs "$P")" P-ran "the owners' P1 work ran"
wait_state "$S" succeeded 30
expect_eq "$(queued_after_of "$S")" null "queued_after of workload S once it ran"
expect_eq "$(events_among "$S" submitted,staged,unstaged,admitted,running,succeeded)" \
  "submitted,staged,unstaged,admitted,running,succeeded" "workload S's events, in time order"
s_jobs=$(jobs_of "$S")
expect_eq "$(head -1 <<<"$s_jobs")" "$s_job" "workload S's first Slurm job (the one staged)"
[ "$(wc -l <<<"$s_jobs")" = 2 ] || fail "workload S should have had two Slurm jobs: $(all_jobs)"
expect_eq "$(slurm_job "$(tail -1 <<<"$s_jobs")" %T)" COMPLETED "workload S's second Slurm job"
expect_eq "$(marker_count "$S" S-ran)" 1 "S-ran lines in S's log"
s_start=$(db "SELECT min(started_ms) FROM allocations WHERE workload_id = $S")
p_end=$(db "SELECT max(ended_ms) FROM allocations WHERE workload_id = $P")
if [ -z "$s_start" ] || [ -z "$p_end" ] || [ "$s_start" -lt "$p_end" ]; then
  fail "workload S started ($s_start) before the owners' P1 work ended ($p_end)"
fi
expect_eq "$(db "SELECT DISTINCT end_reason FROM allocations WHERE workload_id = $R")" preempted \
  "workload R's allocations' end"

# 5. Usage: every allocation closed, no GPU held twice, each run metered once.
expect_eq "$(db "SELECT count(*) FROM allocations WHERE ended_ms IS NULL")" 0 "open allocations"
check_no_overlap "at the end"
for w in "$A" "$B" "$A1" "$B1" "$B2" "$B3" "$G" "$H" "$K" "$L" "$O" "$C" "$E" "$F" "$F2" "$R" "$P" "$S"; do
  expect_eq "$(db "SELECT count(*) FROM usage_records WHERE workload_id = $w")" 1 "usage records of workload $w"
done
expect_eq "$(db "SELECT count(*) FROM usage_records WHERE workload_id = $D")" 0 "usage records of cancelled workload D"
out=$("${g[@]}" usage verify) || fail "usage verify: $out"
expect_contains "$out" "ledger ok" "the usage ledger"
stop_daemon
echo "slurm queue-ahead e2e: ok"
