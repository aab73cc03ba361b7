#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# An open event stream ends once its caller changes: the token revoked or
# expired, the user disabled, a role binding removed. Each time the stream
# is open, the change is made, then an event the caller could have seen
# before is written; the stream must end without delivering it. And what a
# stream delivers is filtered by what its caller may see now, not when it
# opened: an organization moved away takes its projects' events with it.
. "$(dirname "$0")/lib.sh"

start_daemon "$TMP/gpuaas.db"
api POST /v1/organizations "$ADMIN_TOKEN" '{"name":"acme"}'
org=$(jq -r .id <<<"$BODY")
api POST /v1/projects "$ADMIN_TOKEN" "{\"org_id\":$org,\"name\":\"vision\"}"
project=$(jq -r .id <<<"$BODY")
api POST /v1/flavors "$ADMIN_TOKEN" '{"name":"cpu.small"}'
flavor=$(jq -r .id <<<"$BODY")

# new_viewer NAME [expires_at]: a user bound as viewer of the project; sets USER_ID,
# BINDING_ID, TOKEN_ID and TOKEN.
new_viewer() {
  api POST /v1/users "$ADMIN_TOKEN" "{\"name\":\"$1\"}"
  USER_ID=$(jq -r .id <<<"$BODY")
  api POST /v1/role-bindings "$ADMIN_TOKEN" "{\"user_id\":$USER_ID,\"role\":\"viewer\",\"project_id\":$project}"
  BINDING_ID=$(jq -r .id <<<"$BODY")
  local exp=""
  [ -z "${2:-}" ] || exp=",\"expires_at\":\"$2\""
  api POST /v1/tokens "$ADMIN_TOKEN" "{\"user_id\":$USER_ID,\"name\":\"sse\"$exp}"
  TOKEN_ID=$(jq -r .id <<<"$BODY")
  TOKEN=$(jq -r .token <<<"$BODY")
}

# open_stream FILE TOKEN: follows /v1/events into FILE; sets STREAM_PID once it is open.
open_stream() {
  curl -sN -H "Accept: text/event-stream" -H "Authorization: Bearer $2" "$URL/v1/events" >"$1" 2>&1 &
  STREAM_PID=$!
  for _ in $(seq 200); do
    grep -q "events of gpuaas" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  fail "the stream did not open: $(cat "$1")"
}

# submit_in PROJECT: a workload there (its "submitted" event); prints its id.
submit_in() {
  api POST /v1/workloads "$ADMIN_TOKEN" "{\"project_id\":$1,\"flavor_id\":$flavor}"
  [ "$HTTP_STATUS" = 201 ] || fail "submit: $HTTP_STATUS $BODY"
  jq -r .id <<<"$BODY"
}

# expect_ended FILE WORKLOAD WHAT: the stream has ended without the workload's event.
expect_ended() {
  local deadline=$((SECONDS + 10))
  while kill -0 "$STREAM_PID" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || { kill "$STREAM_PID"; fail "$3: the stream is still open"; }
    sleep 0.1
  done
  wait "$STREAM_PID" 2>/dev/null || true
  if grep -q "\"workload_id\":$2," "$1"; then fail "$3: the stream delivered workload $2's event: $(cat "$1")"; fi
}

# A control: a stream whose caller does not change delivers the event.
new_viewer vic
open_stream "$TMP/control.sse" "$TOKEN"
w=$(submit_in "$project")
deadline=$((SECONDS + 10))
until grep -q "\"workload_id\":$w," "$TMP/control.sse"; do
  [ $SECONDS -lt $deadline ] || fail "the control stream did not deliver: $(cat "$TMP/control.sse")"
  sleep 0.1
done
kill "$STREAM_PID"; wait "$STREAM_PID" 2>/dev/null || true

new_viewer rita
open_stream "$TMP/revoked.sse" "$TOKEN"
api DELETE "/v1/tokens/$TOKEN_ID" "$ADMIN_TOKEN"
expect_eq "$HTTP_STATUS" 204 "revoking"
expect_ended "$TMP/revoked.sse" "$(submit_in "$project")" "a revoked token"

new_viewer dora
open_stream "$TMP/disabled.sse" "$TOKEN"
api PATCH "/v1/users/$USER_ID" "$ADMIN_TOKEN" '{"disabled":true}'
expect_eq "$HTTP_STATUS" 200 "disabling"
expect_ended "$TMP/disabled.sse" "$(submit_in "$project")" "a disabled user"

new_viewer bea
open_stream "$TMP/unbound.sse" "$TOKEN"
api DELETE "/v1/role-bindings/$BINDING_ID" "$ADMIN_TOKEN"
expect_eq "$HTTP_STATUS" 204 "removing the binding"
expect_ended "$TMP/unbound.sse" "$(submit_in "$project")" "a removed binding"

new_viewer eli "$(date -u -d "+3 seconds" +%Y-%m-%dT%H:%M:%SZ)"
open_stream "$TMP/expired.sse" "$TOKEN"
api GET /v1/whoami "$TOKEN"
expect_eq "$HTTP_STATUS" 200 "the token before its expiry"
until [ "$(curl -s -o /dev/null -w "%{http_code}" -H "Authorization: Bearer $TOKEN" "$URL/v1/whoami")" = 401 ]; do
  sleep 0.2
done
expect_ended "$TMP/expired.sse" "$(submit_in "$project")" "an expired token"

# Moving an organization changes who sees its projects without touching any binding: a
# viewer of acme stops seeing the events of labs' project once labs moved under rival.
api POST /v1/organizations "$ADMIN_TOKEN" '{"name":"rival"}'
rival=$(jq -r .id <<<"$BODY")
api POST /v1/organizations "$ADMIN_TOKEN" "{\"name\":\"labs\",\"parent_id\":$org}"
labs=$(jq -r .id <<<"$BODY")
api POST /v1/projects "$ADMIN_TOKEN" "{\"org_id\":$labs,\"name\":\"speech\"}"
speech=$(jq -r .id <<<"$BODY")
api POST /v1/users "$ADMIN_TOKEN" '{"name":"olga"}'
olga=$(jq -r .id <<<"$BODY")
api POST /v1/role-bindings "$ADMIN_TOKEN" "{\"user_id\":$olga,\"role\":\"viewer\",\"org_id\":$org}"
api POST /v1/tokens "$ADMIN_TOKEN" "{\"user_id\":$olga}"
olga_token=$(jq -r .token <<<"$BODY")
open_stream "$TMP/moved.sse" "$olga_token"
before=$(submit_in "$speech")
deadline=$((SECONDS + 10))
until grep -q "\"workload_id\":$before," "$TMP/moved.sse"; do
  [ $SECONDS -lt $deadline ] || fail "speech's event while it is in acme: $(cat "$TMP/moved.sse")"
  sleep 0.1
done
api PATCH "/v1/organizations/$labs" "$ADMIN_TOKEN" "{\"parent_id\":$rival}"
expect_eq "$HTTP_STATUS" 200 "moving labs under rival"
hidden=$(submit_in "$speech")
shown=$(submit_in "$project")
deadline=$((SECONDS + 10))
until grep -q "\"workload_id\":$shown," "$TMP/moved.sse"; do
  [ $SECONDS -lt $deadline ] || fail "acme's viewer lost acme's events: $(cat "$TMP/moved.sse")"
  sleep 0.1
done
if grep -q "\"workload_id\":$hidden," "$TMP/moved.sse"; then
  fail "acme's viewer saw an event of a project that moved out of acme"
fi
kill "$STREAM_PID"; wait "$STREAM_PID" 2>/dev/null || true

stop_daemon
echo "events revoked: ok"
