#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpuaasd start-up and shutdown: ready line, bootstrap token shown once,
# clean SIGTERM, and one-line errors with a non-zero exit for a port in use,
# a store that cannot be opened, a store from a newer version and bad flags.
. "$(dirname "$0")/lib.sh"

start_daemon
[ -n "$ADMIN_TOKEN" ] || fail "no bootstrap token written"
expect_contains "$(cat "$TMP"/daemon0.out)" "$ADMIN_TOKEN" "bootstrap token printed on stdout"
[ "$(stat -c %a "$TMP/token")" = 600 ] || fail "token file is not mode 0600"
api GET /v1/whoami "$ADMIN_TOKEN"
expect_eq "$HTTP_STATUS" 200 "whoami as bootstrap admin"
expect_contains "$BODY" '"admin":true' "bootstrap user is admin"
expect_contains "$(curl -sS -D - -o /dev/null "$URL/healthz")" "X-Request-Id" "request id header"

# A second daemon on the same port: one line, exit 1.
rc=0
"$GPUAASD" --listen "127.0.0.1:$PORT" --db "$TMP/other.db" >"$TMP/second.out" 2>"$TMP/second.err" || rc=$?
expect_eq "$rc" 1 "exit status with the port in use"
expect_eq "$(wc -l <"$TMP/second.err")" 1 "lines printed with the port in use"
expect_contains "$(cat "$TMP/second.err")" "could not listen on 127.0.0.1:$PORT: address already in use" "port-in-use message"
stop_daemon

# Restart on the same store: no second bootstrap, the token still works.
start_daemon "$TMP/gpuaas.db"
[ ! -s "$TMP/token" ] || fail "bootstrap ran twice"
grep -q gpa_ "$TMP/daemon1.out" && fail "token printed again on restart"
api GET /v1/whoami "$ADMIN_TOKEN"
expect_eq "$HTTP_STATUS" 200 "old token after restart"
stop_daemon

# A store that cannot be opened.
rc=0
"$GPUAASD" --listen 127.0.0.1:0 --db /nonexistent-dir/x.db >/dev/null 2>"$TMP/nodb.err" || rc=$?
expect_eq "$rc" 1 "exit status with an unopenable store"
expect_eq "$(wc -l <"$TMP/nodb.err")" 1 "lines printed with an unopenable store"
expect_contains "$(cat "$TMP/nodb.err")" "/nonexistent-dir/x.db" "message names the store"

# A store written by a newer gpuaas is refused, and left untouched. The newer schema is forged
# on purpose, in a copy no daemon has open (the one above is stopped): detecting it is the point.
cp "$TMP/gpuaas.db" "$TMP/newer.db"
sqlite3 "$TMP/newer.db" "UPDATE schema_migrations SET version = version + 1000;" 2>/dev/null ||
  sqlite3 "$TMP/newer.db" "INSERT INTO schema_migrations(version) VALUES (9999);"
before=$(sqlite3 "$TMP/newer.db" "SELECT count(*) FROM audit;")
rc=0
"$GPUAASD" --listen 127.0.0.1:0 --db "$TMP/newer.db" >/dev/null 2>"$TMP/newer.err" || rc=$?
expect_eq "$rc" 1 "exit status with a newer schema"
expect_eq "$(wc -l <"$TMP/newer.err")" 1 "lines printed with a newer schema"
expect_contains "$(cat "$TMP/newer.err")" "newer" "newer-schema message"
expect_eq "$(sqlite3 "$TMP/newer.db" "SELECT count(*) FROM audit;")" "$before" "newer store untouched"

# Bad flags and values: usage errors, exit 2.
rc=0; "$GPUAASD" --no-such-flag 1 2>"$TMP/flag.err" || rc=$?
expect_eq "$rc" 2 "exit status for an unknown flag"
expect_contains "$(cat "$TMP/flag.err")" "unknown flag '--no-such-flag'" "unknown flag message"
rc=0; "$GPUAASD" --threads zero 2>"$TMP/flag.err" || rc=$?
expect_eq "$rc" 2 "exit status for a bad number"
expect_contains "$(cat "$TMP/flag.err")" "'threads' must be an integer" "bad number message"

# Config file and environment: the flag beats the environment beats the file.
printf '# comment\nlisten = 127.0.0.1:1\nlog_level = debug\n' >"$TMP/gpuaasd.conf"
rc=0; GPUAAS_LISTEN=127.0.0.1:bad "$GPUAASD" --config "$TMP/gpuaasd.conf" 2>"$TMP/env.err" || rc=$?
expect_eq "$rc" 2 "a bad environment value is an error"
expect_contains "$(cat "$TMP/env.err")" "GPUAAS_LISTEN" "message names the variable"
printf 'bogus = 1\n' >"$TMP/bad.conf"
rc=0; "$GPUAASD" --config "$TMP/bad.conf" 2>"$TMP/conf.err" || rc=$?
expect_eq "$rc" 2 "unknown key in the config file"
expect_contains "$(cat "$TMP/conf.err")" "bad.conf:1: unknown setting 'bogus'" "file and line named"
echo "startup: ok"
