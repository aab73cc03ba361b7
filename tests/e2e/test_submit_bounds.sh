#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Borrowers cannot make themselves unpreemptible: min_runtime_s and grace_s
# are bounded by the daemon's max-min-runtime-s and max-grace-s (a submit
# above them is 400 naming the field and the bound), so an owner that wants
# its pool back gets it once the borrowers' bounded minimum run and grace are
# over.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sim_setup.sh"

start_daemon "$TMP/gpuaas.db" --sim-fleet "$FLEET" --grace-s 1 --max-min-runtime-s 2 --max-grace-s 1
setup_teams

api POST /v1/workloads "$ADMIN_TOKEN" "{\"project_id\":$PROJECT_B,\"flavor_id\":$FLAVOR_4X,\"min_runtime_s\":1099511627776}"
expect_eq "$HTTP_STATUS" 400 "a min_runtime_s far above the bound"
expect_eq "$(jq -r .error.detail.field <<<"$BODY")" min_runtime_s "the field named"
expect_contains "$(jq -r .error.message <<<"$BODY")" "bound of 2 s (setting max-min-runtime-s)" "the bound named"
api POST /v1/workloads "$ADMIN_TOKEN" "{\"project_id\":$PROJECT_B,\"flavor_id\":$FLAVOR_4X,\"min_runtime_s\":3}"
expect_eq "$HTTP_STATUS" 400 "min_runtime_s one above the bound"
api POST /v1/workloads "$ADMIN_TOKEN" "{\"project_id\":$PROJECT_B,\"flavor_id\":$FLAVOR_4X,\"grace_s\":2}"
expect_eq "$HTTP_STATUS" 400 "grace_s above the bound"
expect_eq "$(jq -r .error.detail.field <<<"$BODY")" grace_s "the field named"
expect_contains "$(jq -r .error.message <<<"$BODY")" "max-grace-s" "the setting named"
api POST /v1/workloads "$ADMIN_TOKEN" "{\"project_id\":$PROJECT_B,\"flavor_id\":$FLAVOR_4X,\"min_runtime_s\":2,\"max_runtime_s\":1}"
expect_eq "$HTTP_STATUS" 400 "min_runtime_s above max_runtime_s"
expect_eq "$(jq '.items | length' <<<"$(curl -sS -H "Authorization: Bearer $ADMIN_TOKEN" "$URL/v1/workloads")")" 0 \
  "refused submits left nothing behind"

# B fills the fleet (half of it borrowed from A) asking for as much as it may.
for i in 1 2 3 4; do
  submit "$PROJECT_B" "$FLAVOR_4X" opportunistic 3600 ',"min_runtime_s":2,"grace_s":1' >/dev/null
done
deadline=$((SECONDS + 15))
until [ "$(curl -sS -H "Authorization: Bearer $ADMIN_TOKEN" "$URL/v1/workloads?state=running" | jq '.items | length')" = 4 ]; do
  [ $SECONDS -lt $deadline ] || fail "B's work did not all start"
  sleep 0.2
done

# A takes its pool back: both owned jobs run once B's 2 s minimum and 1 s grace are over.
a1=$(submit "$PROJECT_A" "$FLAVOR_4X" owned 3600)
a2=$(submit "$PROJECT_A" "$FLAVOR_4X" owned 3600)
wait_state "$a1" running 20
wait_state "$a2" running 20
api GET /v1/preemptions "$ADMIN_TOKEN"
[ "$(jq '.items | length' <<<"$BODY")" -ge 1 ] || fail "no preemption recorded: $BODY"
stop_daemon
echo "submit bounds: ok"
