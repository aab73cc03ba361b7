#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The break-glass: when no admin can sign in (its only token revoked, its
# user disabled), `gpuaasd recover-admin` run against the stopped daemon's
# store makes the user an enabled admin with a new token, printed once and
# audited; it refuses to run while a gpuaasd serves the store.
. "$(dirname "$0")/lib.sh"

DB=$TMP/gpuaas.db

# recover [args...]: runs recover-admin on $DB; sets RC, OUT, ERR.
recover() {
  RC=0
  "$GPUAASD" recover-admin "$@" --db "$DB" >"$TMP/recover.out" 2>"$TMP/recover.err" || RC=$?
  OUT=$(cat "$TMP/recover.out")
  ERR=$(cat "$TMP/recover.err")
}

token_in() { grep -oE 'gpa_[A-Za-z0-9_-]+' <<<"$1" | head -1; }

start_daemon "$DB"
api GET /v1/whoami "$ADMIN_TOKEN"
token_id=$(jq -r .token_id <<<"$BODY")
# Locked out through the API itself: the only admin revokes its only token.
api DELETE "/v1/tokens/$token_id" "$ADMIN_TOKEN"
expect_eq "$HTTP_STATUS" 204 "the last admin token revoked"
api GET /v1/whoami "$ADMIN_TOKEN"
expect_eq "$HTTP_STATUS" 401 "no admin can sign in"

# Not beside a running daemon: refused, nothing written.
audit_before=$(sqlite3 "$DB" "SELECT count(*) FROM audit;")
recover
expect_eq "$RC" 1 "recover-admin beside a running gpuaasd"
expect_contains "$ERR" "a gpuaasd is serving database '$DB'; stop it first" "refusal message"
[ -z "$(token_in "$OUT")" ] || fail "a token was printed beside a running gpuaasd"
expect_eq "$(sqlite3 "$DB" "SELECT count(*) FROM audit;")" "$audit_before" "nothing written"
stop_daemon

# Stopped: a new token, printed once, for the same user.
recover
expect_eq "$RC" 0 "recover-admin on the stopped daemon's store: $ERR"
NEW=$(token_in "$OUT")
[ -n "$NEW" ] || fail "no token printed: $OUT"
expect_contains "$OUT" "user 'admin'" "names the user"
[ -z "$ERR" ] || fail "recover-admin printed on stderr: $ERR"
expect_eq "$(sqlite3 "$DB" "SELECT count(*) FROM audit WHERE action = 'break-glass' AND resource = 'tokens';")" 1 "the new token audited"
start_daemon "$DB"
[ ! -s "$TMP/token" ] || fail "the restart bootstrapped again"
api GET /v1/whoami "$NEW"
expect_eq "$HTTP_STATUS" 200 "the break-glass token signs in"
expect_contains "$BODY" '"admin":true' "as an admin"
expect_contains "$BODY" '"name":"admin"' "as the same user"
stop_daemon

# A disabled admin (a store locked out by an older gpuaas) is enabled again. The lock-out is
# written into the store on purpose, as no API would leave the fleet without an admin: only
# with the daemon stopped (above), as recover-admin itself runs.
sqlite3 "$DB" "UPDATE users SET disabled = 1;"
recover
expect_eq "$RC" 0 "recover-admin for a disabled admin: $ERR"
NEW=$(token_in "$OUT")
expect_eq "$(sqlite3 "$DB" "SELECT disabled FROM users WHERE name = 'admin';")" 0 "admin enabled again"
expect_eq "$(sqlite3 "$DB" "SELECT count(*) FROM audit WHERE action = 'break-glass' AND resource = 'users';")" 1 "the enabling audited"

# A user that does not exist is made, with the admin role.
recover rescue
expect_eq "$RC" 0 "recover-admin for a new user: $ERR"
RESCUE=$(token_in "$OUT")
expect_contains "$OUT" "made now" "says the user was made"
start_daemon "$DB"
api GET /v1/whoami "$RESCUE"
expect_eq "$HTTP_STATUS" 200 "the new user signs in"
expect_contains "$BODY" '"admin":true' "the new user is admin"
api GET /v1/whoami "$NEW"
expect_eq "$HTTP_STATUS" 200 "the re-enabled admin signs in"
stop_daemon

# A name the API would refuse is refused here too.
recover 'Not A Name'
expect_eq "$RC" 1 "recover-admin with a bad user name"
echo "break_glass: ok"
