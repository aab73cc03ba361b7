#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The checks lib.sh makes at the end of every end-to-end test, tried on
# purpose: a test whose daemon died behind its back, or whose daemon printed
# a sanitizer report, must fail even when all its own checks passed; a test
# that stopped or killed its daemon itself, and a clean one, must pass.
# Each case is a small script that sources lib.sh, run as its own process.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/gpuaas-libcheck.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0

# run_case NAME WANT_RC WANT_TEXT BODY: runs BODY after lib.sh; checks the exit
# status (0 or non-zero) and that stderr holds WANT_TEXT ("" for none).
run_case() {
  local name=$1 want=$2 text=$3 body=$4 rc=0
  printf '. %q/lib.sh\n%s\n' "$here" "$body" >"$work/$name.sh"
  bash "$work/$name.sh" >"$work/$name.out" 2>"$work/$name.err" || rc=$?
  if { [ "$want" = 0 ] && [ $rc -ne 0 ]; } || { [ "$want" != 0 ] && [ $rc -eq 0 ]; }; then
    echo "case $name: exit status $rc, wanted $([ "$want" = 0 ] && echo 0 || echo non-zero)" >&2
    sed 's/^/  | /' "$work/$name.err" | tail -20 >&2
    failures=$((failures + 1))
  elif [ -n "$text" ] && ! grep -q -- "$text" "$work/$name.err"; then
    echo "case $name: stderr does not say '$text'" >&2
    sed 's/^/  | /' "$work/$name.err" | tail -20 >&2
    failures=$((failures + 1))
  else
    echo "case $name: ok (exit $rc)"
  fi
}

run_case clean 0 "" 'start_daemon
api GET /healthz "$ADMIN_TOKEN"; expect_eq "$HTTP_STATUS" 200 healthz'
run_case stopped_on_purpose 0 "" 'start_daemon
stop_daemon'
run_case killed_on_purpose 0 "" 'start_daemon
kill_daemon'
# The daemon dies behind the test's back (as a crash would) and the test's
# last check still passes: the end-of-test check must catch it.
run_case died 1 "died during the test" 'start_daemon
kill -KILL "$DAEMON_PID"
sleep 0.2
expect_eq 1 1 "a check that passes"'
# Same, with a marked test (kill_marked_on_exit replaces the EXIT trap).
run_case died_marked 1 "died during the test" 'kill_marked_on_exit
start_daemon
kill -KILL "$DAEMON_PID"
sleep 0.2'
# A sanitizer's report in the daemon's output, as ASan and UBSan write it:
# a wrapper prints it on the daemon's own stderr, then becomes the daemon.
# (Text appended to the log from outside would be overwritten by the
# daemon's next line: it writes at its own file offset.)
fake_report() { # NAME LINE: a gpuaasd that prints LINE first
  printf '#!/bin/sh\necho %q >&2\nexec %q "$@"\n' "$2" "$GPUAASD" >"$work/$1"
  chmod +x "$work/$1"
}
fake_report asan-gpuaasd "==4242==ERROR: AddressSanitizer: heap-use-after-free on address 0x1"
fake_report ubsan-gpuaasd "src/api/http.c:10:5: runtime error: signed integer overflow"
fake_report leak-gpuaasd "==4242==ERROR: LeakSanitizer: detected memory leaks"
run_case asan_report 1 "sanitizer report" "GPUAASD=$work/asan-gpuaasd
start_daemon"
run_case ubsan_report 1 "sanitizer report" "GPUAASD=$work/ubsan-gpuaasd
start_daemon
stop_daemon"
run_case leak_report 1 "sanitizer report" "GPUAASD=$work/leak-gpuaasd
start_daemon
kill_daemon"
# A report is still shown when the test failed anyway.
run_case failed_and_report 1 "sanitizer report" "GPUAASD=$work/asan-gpuaasd
start_daemon
fail 'the test fails by itself'"
# A daemon a test ran by hand, its stderr in $TMP/*.err.
run_case own_daemon_report 1 "sanitizer report" 'echo "x.c:1:1: runtime error: load of null pointer" >"$TMP/second.err"'

[ $failures -eq 0 ] || { echo "FAIL: $failures case(s) of lib.sh's end-of-test checks" >&2; exit 1; }
echo "all cases of lib.sh's end-of-test checks behave"
