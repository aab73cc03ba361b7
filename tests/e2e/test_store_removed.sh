#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A store file removed or replaced under a running gpuaasd: no change is
# acknowledged after it (each write is refused with a clear error, or the
# daemon has already stopped), and the daemon stops with exit status 1 and
# an error line that says why, instead of serving a store whose changes are lost.
. "$(dirname "$0")/lib.sh"

# post_org NAME: sets HTTP_STATUS ("000" when the daemon no longer answers) and BODY.
post_org() {
  HTTP_STATUS=$(curl -sS -o "$TMP/resp" -w '%{http_code}' -X POST \
    -H "Authorization: Bearer $ADMIN_TOKEN" -H 'Content-Type: application/json' \
    --data "{\"name\":\"$1\"}" "$URL/v1/organizations" 2>/dev/null) || true
  BODY=$(cat "$TMP/resp" 2>/dev/null || true)
}

# expect_stopped_for WHY: the daemon exits 1 by itself with an error line naming WHY.
expect_stopped_for() {
  local rc=0 deadline=$((SECONDS + 30))
  while kill -0 "$DAEMON_PID" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || fail "gpuaasd still running with its store $1"
    sleep 0.1
  done
  wait "$DAEMON_PID" || rc=$?
  DAEMON_PID=
  expect_eq "$rc" 1 "exit status after the store was $1"
  grep -q "level=error msg=\"stopping: the store can no longer take changes\".*was $1" "$DAEMON_LOG" ||
    fail "no error line saying the store was $1"
}

# Removed (the file and its -wal and -shm, as 'rm g.db*' does).
start_daemon "$TMP/gpuaas.db"
post_org before
expect_eq "$HTTP_STATUS" 201 "a change before the store is removed"
rm -f "$TMP"/gpuaas.db*
for name in a b c; do
  post_org "$name"
  case "$HTTP_STATUS" in
  503) expect_contains "$BODY" "gpuaas.db' was removed while gpuaasd was running" "refusal" ;;
  000) ;; # already stopped: refused too
  *) fail "a change after the store was removed answered $HTTP_STATUS: $BODY" ;;
  esac
done
expect_stopped_for removed

# Replaced by another file (a restore copied over it, say).
start_daemon "$TMP/second.db"
post_org before
expect_eq "$HTTP_STATUS" 201 "a change before the store is replaced"
cp "$TMP/second.db" "$TMP/copy.db"
mv "$TMP/copy.db" "$TMP/second.db"
post_org after
case "$HTTP_STATUS" in
503) expect_contains "$BODY" "was replaced by another file" "refusal" ;;
000) ;;
*) fail "a change after the store was replaced answered $HTTP_STATUS: $BODY" ;;
esac
expect_stopped_for replaced
echo "store_removed: ok"
