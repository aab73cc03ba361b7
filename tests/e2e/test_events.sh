#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Server-sent events on /v1/events: `gpuaas events -f` prints a workload's
# events as they happen; each follower sees only the projects it may see;
# Last-Event-ID resumes after an event; the daemon stops promptly with
# streams open.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sim_setup.sh"

start_daemon "$TMP/gpuaas.db" --sim-fleet "$FLEET" --grace-s 1
setup_teams
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
"${g[@]}" user create alice >/dev/null
"${g[@]}" user create bob >/dev/null
"${g[@]}" role-binding create --user alice --role member --project team-a >/dev/null
"${g[@]}" role-binding create --user bob --role member --project team-b >/dev/null
alice_token=$("${g[@]}" -o json token create --user alice | jq -r .token)
bob_token=$("${g[@]}" -o json token create --user bob | jq -r .token)

"$GPUAAS" --server "$URL" --token "$alice_token" events -f >"$TMP/alice.out" 2>&1 &
alice_pid=$!
curl -sN -H "Accept: text/event-stream" -H "Authorization: Bearer $bob_token" \
  "$URL/v1/events" >"$TMP/bob.sse" 2>&1 &
bob_pid=$!
# Bob's stream starts at the next event once connected (its first line is
# the stream's comment); alice's follow lists past events first.
for _ in $(seq 200); do
  grep -q "events of gpuaas" "$TMP/bob.sse" 2>/dev/null && break
  sleep 0.05
done

wa=$(submit "$PROJECT_A" "$FLAVOR_1X" opportunistic 1)
wb=$(submit "$PROJECT_B" "$FLAVOR_1X" opportunistic 1)
wait_state "$wa" succeeded 15
wait_state "$wb" succeeded 15
deadline=$((SECONDS + 10))
until grep -q "succeeded" "$TMP/alice.out" && grep -q "event: succeeded" "$TMP/bob.sse"; do
  [ $SECONDS -lt $deadline ] || fail "streams did not deliver: $(cat "$TMP/alice.out") / $(cat "$TMP/bob.sse")"
  sleep 0.1
done
# Columns, not spacing: events that happened before the follow connected come
# as one aligned table, later ones line by line.
has_event() { awk -v w="$1" -v t="$2" '$3 == w && (t == "" || $4 == t) { f = 1 } END { exit !f }' "$TMP/alice.out"; }
for t in submitted admitted running succeeded; do
  has_event "$wa" "$t" || fail "alice's follow lacks '$t' of $wa: $(cat "$TMP/alice.out")"
done
has_event "$wb" "" && fail "alice saw bob's workload $wb"
expect_eq "$(grep -c '^data: ' "$TMP/bob.sse")" 4 "bob's events (his workload only)"
grep -q "\"workload_id\":$wa," "$TMP/bob.sse" && fail "bob saw alice's workload $wa"
expect_contains "$(head -1 "$TMP/bob.sse")" ": events of gpuaas" "the stream opens at once"

# Resuming after an event id replays what came after it, within what the caller may see.
first=$(grep '^id: ' "$TMP/bob.sse" | head -1 | cut -d' ' -f2)
timeout 2 curl -sN -H "Accept: text/event-stream" -H "Authorization: Bearer $bob_token" \
  -H "Last-Event-ID: $first" "$URL/v1/events" >"$TMP/resume.sse" || true
expect_eq "$(grep -c '^data: ' "$TMP/resume.sse")" 3 "events after Last-Event-ID $first"
api GET "/v1/events?after=abc" "$bob_token"
expect_eq "$HTTP_STATUS" 400 "a bad after (plain list)"
out=$(curl -s -o /dev/null -w "%{http_code}" -H "Accept: text/event-stream" \
  -H "Authorization: Bearer $bob_token" "$URL/v1/events?project_id=$PROJECT_A")
expect_eq "$out" 404 "bob following alice's project"
out=$(curl -s -o /dev/null -w "%{http_code}" -H "Accept: text/event-stream" "$URL/v1/events")
expect_eq "$out" 401 "a stream without a token"

kill "$alice_pid" 2>/dev/null || true
t0=$(date +%s%N)
stop_daemon
[ $((($(date +%s%N) - t0) / 1000000)) -lt 5000 ] || fail "the daemon took over 5 s to stop with a stream open"
wait "$bob_pid" 2>/dev/null || true
echo "events: ok"
