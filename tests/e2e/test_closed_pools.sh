#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Lending is explicit, and waiting work says so: team C may borrow neither
# team's pool, so its work can never run, and its reason names the pools that
# could run it and says they are not lent to it (to the admin by name, to C's
# member without naming other owners' pools). Once pool B is lent to C and B
# fills it, C's work waits for room, and its reason names pool A, which has
# room but is not lent to C.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sim_setup.sh"

start_daemon "$TMP/gpuaas.db" --sim-fleet "$FLEET"
setup_teams
admin=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
"${admin[@]}" project create team-c --org acme >/dev/null
"${admin[@]}" user create carol >/dev/null
"${admin[@]}" role-binding create --user carol --role member --project team-c >/dev/null
carol=("$GPUAAS" --server "$URL" --token "$("${admin[@]}" -o json token create --user carol | jq -r .token)")
carol_token=$("${admin[@]}" -o json token create --user carol | jq -r .token)

# reason_as TOKEN ID: the workload's reason as that caller reads it.
reason_as() {
  api GET "/v1/workloads/$2" "$1"
  jq -r .reason <<<"$BODY"
}

c1=$("${carol[@]}" -o json run --flavor h100.1x --duration 1h -- x | jq -r .id)
deadline=$((SECONDS + 10))
until [[ "$(reason_as "$ADMIN_TOKEN" "$c1")" == "no GPUs"* ]]; do
  [ $SECONDS -lt $deadline ] || fail "C's work never said it cannot run: $(reason_as "$ADMIN_TOKEN" "$c1")"
  sleep 0.1
done
expect_eq "$(reason_as "$ADMIN_TOKEN" "$c1")" \
  "no GPUs this project may use can run it; pool-a, pool-b could, but are not lent to this project: their owners can add it to the pool's access list" \
  "the admin reads which pools could run it"
expect_eq "$(reason_as "$carol_token" "$c1")" \
  "no GPUs this project may use can run it; 2 pools of other owners could, but are not lent to this project: their owners can add it to the pool's access list" \
  "C's member does not learn other owners' pool names"
expect_contains "$("${carol[@]}" ps)" "not lent to this project" "ps shows it"

# Pool B lent to C, and B fills it: C waits for room, and pool A has room but is closed.
b_ids=()
for i in $(seq 8); do
  b_ids+=("$(submit "$PROJECT_B" "$FLAVOR_1X" owned 3600)")
done
for id in "${b_ids[@]}"; do wait_state "$id" running 15; done
"${admin[@]}" pool update pool-b --access-projects team-a,team-c >/dev/null
deadline=$((SECONDS + 10))
until [[ "$(reason_as "$ADMIN_TOKEN" "$c1")" == "waiting for 1 "* ]]; do
  [ $SECONDS -lt $deadline ] || fail "C's work does not wait for room: $(reason_as "$ADMIN_TOKEN" "$c1")"
  sleep 0.1
done
expect_contains "$(reason_as "$ADMIN_TOKEN" "$c1")" \
  "; pool-a has room now but is not lent to this project: their owners can add it to the pool's access list" \
  "the admin reads which closed pool has room"
expect_contains "$(reason_as "$carol_token" "$c1")" \
  "; 1 pool of other owners has room now but is not lent to this project" "C's member reads a count"

# Lent: it runs there.
"${admin[@]}" pool update pool-a --access-projects team-b,team-c >/dev/null
wait_state "$c1" running 15

# Lent to all, at most 2 GPUs at once: C's second job gets the second, its third waits.
"${admin[@]}" pool update pool-a --access-projects '' --lend-to-all true --lending-limit 2 >/dev/null
api GET "/v1/pools?name=pool-a" "$ADMIN_TOKEN"
expect_eq "$(jq -c '.items[0] | [.lend_to_all, .lending_limit_milli, .access_project_ids]' <<<"$BODY")" \
  '[true,2000,[]]' "pool-a lent to all, at most 2 GPUs"
wait_state "$c1" running 15
c2=$("${carol[@]}" -o json run --flavor h100.1x --duration 1h -- x | jq -r .id)
c3=$("${carol[@]}" -o json run --flavor h100.1x --duration 1h -- x | jq -r .id)
wait_state "$c2" running 15
sleep 1
expect_eq "$(state_of "$c3")" queued "the lending limit holds C's third job back"
api GET "/v1/inventory" "$ADMIN_TOKEN"
expect_eq "$(jq '[.items[] | select(.used_by.project == "team-c")] | length' <<<"$BODY")" 2 \
  "C holds two of pool A's GPUs"
# Bad input: a lending limit of 0 or below is refused with a clear error, and nothing changes.
rc=0
"${admin[@]}" pool update pool-a --lending-limit-milli 0 >"$TMP/out" 2>&1 || rc=$?
expect_eq "$rc" 2 "a lending limit of 0 is refused by the CLI"
expect_contains "$(cat "$TMP/out")" "--lending-limit-milli: '0' is out of range" "the CLI's error"
pool_a=$("${admin[@]}" -o json pool show pool-a | jq -r .id)
api PATCH "/v1/pools/$pool_a" "$ADMIN_TOKEN" '{"lending_limit_milli":0}'
expect_eq "$HTTP_STATUS" 400 "and by the API"
expect_contains "$BODY" "lending_limit_milli" "the API's error names the field"
api GET "/v1/pools?name=pool-a" "$ADMIN_TOKEN"
expect_eq "$(jq '.items[0].lending_limit_milli' <<<"$BODY")" 2000 "the limit is unchanged"
check_daemon_alive
echo "PASS"
