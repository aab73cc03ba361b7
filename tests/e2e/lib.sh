#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Shared helpers for the end-to-end tests: each test starts the real gpuaasd
# on 127.0.0.1 with a free port and a fresh store, drives it with the real
# CLI or curl, and fails if a sanitizer printed anything in the daemon's log.
set -euo pipefail

GPUAASD=${GPUAASD:?set GPUAASD to the gpuaasd binary}
GPUAAS=${GPUAAS:?set GPUAAS to the gpuaas binary}
TMP=$(mktemp -d /tmp/gpuaas-e2e.XXXXXX)
export GPUAAS_CONFIG=$TMP/cli.conf
unset GPUAAS_SERVER GPUAAS_TOKEN
DAEMON_PID=
DAEMON_LOG=
PORT=
URL=
ADMIN_TOKEN=

fail() {
  echo "FAIL: $*" >&2
  if [ -n "$DAEMON_LOG" ] && [ -f "$DAEMON_LOG" ]; then
    echo "--- daemon log (last 30 lines) ---" >&2
    tail -30 "$DAEMON_LOG" >&2
  fi
  exit 1
}

# Every line a sanitizer prints starts with one of these (ASan and LSan:
# "==PID==ERROR: AddressSanitizer: ...", "ERROR: LeakSanitizer: ..."; UBSan:
# "file.c:12:3: runtime error: ...").
SANITIZER_PATTERN="ERROR: AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer|ThreadSanitizer"

# check_sanitizers: fails when any daemon's output in $TMP (the logs
# start_daemon writes and the *.err files of daemons a test ran itself) has
# a sanitizer report.
check_sanitizers() {
  local f
  for f in "$TMP"/daemon*.log "$TMP"/daemon*.out "$TMP"/*.err; do
    [ -f "$f" ] || continue
    if grep -qE "$SANITIZER_PATTERN" "$f"; then
      cat "$f" >&2
      fail "sanitizer report in $f"
    fi
  done
}

# check_daemon_alive: the daemon start_daemon started is still running unless
# the test stopped it on purpose (stop_daemon and kill_daemon clear
# DAEMON_PID). A daemon that crashed while the test's last checks happened to
# pass must still fail the test.
check_daemon_alive() {
  [ -n "$DAEMON_PID" ] || return 0
  kill -0 "$DAEMON_PID" 2>/dev/null && return 0
  fail "gpuaasd (pid $DAEMON_PID) died during the test, which did not stop it"
}

cleanup() {
  local rc=$?
  trap - EXIT
  # Checked first, so a failure above still reports a crash or a sanitizer.
  if (check_daemon_alive); then :; else rc=1; fi
  if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
    kill -TERM "$DAEMON_PID" 2>/dev/null || true
    wait "$DAEMON_PID" 2>/dev/null || true
  fi
  # any other daemon of this test (an earlier start that a failure left behind)
  pkill -KILL -f -- "--db $TMP/" 2>/dev/null || true
  # After the daemon stopped: leaks are reported at exit.
  if (check_sanitizers); then :; else rc=1; fi
  if [ $rc -eq 0 ]; then
    rm -rf "$TMP"
  else
    echo "(kept $TMP for inspection)" >&2
  fi
  exit $rc
}
trap cleanup EXIT

# Work outlives a stopped daemon by design. A test that starts processes puts
# $MARK in every command line and calls kill_marked_on_exit: whatever it
# started goes with it, before the usual cleanup.
# (Closed by "-m": another test's pid may begin with this one's digits.)
MARK="gpuaas-e2e-$$-m"
kill_marked_on_exit() {
  trap 'rc=$?; pkill -f "$MARK" 2>/dev/null || true; (exit $rc); cleanup; exit $rc' EXIT
}

# start_daemon [db] [extra flags...]: starts gpuaasd, waits for its ready line,
# sets PORT, URL, DAEMON_PID, DAEMON_LOG and (on a fresh store) ADMIN_TOKEN.
start_daemon() {
  local db=${1:-$TMP/gpuaas.db}
  shift || true
  local n=0
  while [ -e "$TMP/daemon$n.log" ]; do n=$((n + 1)); done
  DAEMON_LOG=$TMP/daemon$n.log
  rm -f "$TMP/token"
  "$GPUAASD" --listen 127.0.0.1:0 --db "$db" --bootstrap-token-file "$TMP/token" \
    --threads 2 "$@" >"$TMP/daemon$n.out" 2>"$DAEMON_LOG" &
  DAEMON_PID=$!
  for _ in $(seq 300); do
    if grep -q "msg=ready" "$DAEMON_LOG" 2>/dev/null; then break; fi
    kill -0 "$DAEMON_PID" 2>/dev/null || fail "gpuaasd exited during start"
    sleep 0.05
  done
  grep -q "msg=ready" "$DAEMON_LOG" || fail "gpuaasd did not become ready"
  PORT=$(grep "msg=ready" "$DAEMON_LOG" | sed -E 's/.* port=([0-9]+).*/\1/')
  URL="http://127.0.0.1:$PORT"
  if [ -s "$TMP/token" ]; then ADMIN_TOKEN=$(cat "$TMP/token"); fi
}

stop_daemon() {
  kill -TERM "$DAEMON_PID"
  local rc=0
  wait "$DAEMON_PID" || rc=$?
  DAEMON_PID=
  [ $rc -eq 0 ] || fail "gpuaasd exited with $rc on SIGTERM"
  grep -q "msg=stopped" "$DAEMON_LOG" || fail "no 'stopped' line after SIGTERM"
}

kill_daemon() {
  kill -KILL "$DAEMON_PID"
  wait "$DAEMON_PID" 2>/dev/null || true
  DAEMON_PID=
}

# api METHOD PATH TOKEN [BODY]: sets HTTP_STATUS and BODY (the response body).
api() {
  local method=$1 path=$2 token=$3 body=${4:-}
  local args=(-sS -o "$TMP/resp" -w "%{http_code}" -X "$method" -H "Authorization: Bearer $token")
  if [ -n "$body" ]; then args+=(-H "Content-Type: application/json" --data "$body"); fi
  HTTP_STATUS=$(curl "${args[@]}" "$URL$path")
  BODY=$(cat "$TMP/resp")
}

expect_eq() { # actual expected what
  [ "$1" = "$2" ] || fail "$3: expected '$2', got '$1'"
}

expect_contains() { # haystack needle what
  case "$1" in *"$2"*) ;; *) fail "$3: expected to contain '$2', got '$1'" ;; esac
}

# state_of ID: the workload's state.
state_of() {
  api GET "/v1/workloads/$1" "$ADMIN_TOKEN"
  jq -r .state <<<"$BODY"
}

# wait_state ID STATE [seconds]: waits until the workload is in STATE.
wait_state() {
  local deadline=$((SECONDS + ${3:-20})) st
  while st=$(state_of "$1") && [ "$st" != "$2" ]; do
    [ $SECONDS -lt $deadline ] || fail "workload $1 not $2 in time (is $st)"
    sleep 0.1
  done
}

# slurm_cluster GPUS: GPU class h100 and cluster "sl" on the test Slurm that
# with-slurm.sh stood up ($SLURM_CONF), through "${g[@]}" (the CLI); then waits
# (20 s at most) until Slurm's node records have brought GPUS GPUs.
slurm_cluster() {
  local deadline=$((SECONDS + 20))
  "${g[@]}" gpu-class create h100 >/dev/null
  "${g[@]}" cluster create sl --backend slurm --endpoint "${SLURM_CONF:?}" >/dev/null
  until [ "$("${g[@]}" -o json gpu list --limit 1000 | jq '.items | length')" = "$1" ]; do
    [ $SECONDS -lt $deadline ] || fail "Slurm's nodes and GPUs did not appear: $("${g[@]}" node list)"
    sleep 0.2
  done
}

# owners_and_guests CLUSTER LIMIT_MILLI: org acme with projects owners and
# guests, a pool of CLUSTER's h100 GPUs owned by owners that guests may
# borrow, and an h100 quota of LIMIT_MILLI for each (through "${g[@]}").
owners_and_guests() {
  "${g[@]}" org create acme >/dev/null
  "${g[@]}" project create owners --org acme >/dev/null
  "${g[@]}" project create guests --org acme >/dev/null
  "${g[@]}" pool create "$1-h100" --owner-project owners --cluster "$1" --access-projects guests >/dev/null
  "${g[@]}" quota create --project owners --gpu-class h100 --limit-milli "$2" >/dev/null
  "${g[@]}" quota create --project guests --gpu-class h100 --limit-milli "$2" >/dev/null
}
