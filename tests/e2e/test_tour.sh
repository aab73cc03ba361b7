#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's five-minute tour on the demo world that scripts/run.sh makes on
# a machine without a GPU (demo-fleet.sh, demo-world.sh with demo-history.sh),
# through the real CLI against the real daemon: two organizations and three
# teams; robotics' borrowed GPUs reclaimed by vision in the first minute, with
# a ledger entry and the reclaim named in the victims' events; vision's work
# runs; finished work has usage; last month's invoices issued; and every
# command of the README's tour block exits 0 (run from the README itself, so
# the two cannot drift apart).
. "$(dirname "$0")/lib.sh"

start_daemon
g() { "$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN" "$@"; }
start=$SECONDS
export GPUAAS_SERVER=$URL GPUAAS_TOKEN=$ADMIN_TOKEN
bash "$GPUAAS_SOURCE_DIR/scripts/demo-fleet.sh" "$GPUAAS" >/dev/null || fail "demo-fleet.sh failed"
bash "$GPUAAS_SOURCE_DIR/scripts/demo-world.sh" "$GPUAAS" "$TMP/gpuaas-demo-users" >/dev/null ||
  fail "demo-world.sh failed"
unset GPUAAS_SERVER GPUAAS_TOKEN
users=$TMP/gpuaas-demo-users
tok() { awk -v u="$1" '$1 == u { print $4 }' "$users"; }
as() { local u=$1; shift; "$GPUAAS" --server "$URL" --token "$(tok "$u")" "$@"; }

# The world: labelled simulated, two organizations, three teams, a user of each role.
expect_eq "$(g -o json cluster show demo-sim | jq -r .labels.simulated)" true "demo is labelled"
expect_eq "$(g -o json org list | jq -r '[.items[].name] | sort | join(",")')" acme,globex \
  "two organizations"
expect_eq "$(g -o json project list | jq -r '[.items[].name] | sort | join(",")')" \
  nlp,robotics,vision "three teams"
expect_eq "$(g -o json pool list | jq '.items | length')" 3 "a pool per team"
# Lists name what they refer to, with human units (issue 18).
expect_contains "$(g pool list | tr -s ' ')" "vision-h100" "pools by name"
expect_contains "$(g pool list)" "USD/h" "pool cost per hour in the currency"
expect_contains "$(g quota list | tr -s ' ')" "vision h100-80gb" "quotas by name"
expect_eq "$(stat -c %a "$users")" 600 "the users file is mode 0600"
expect_eq "$(grep -vc '^#' "$users")" 6 "six demo users"
expect_contains "$(as rita whoami)" "rita" "rita's token works"
expect_eq "$(as rita -o json project list | jq -r '[.items[].name] | join(",")')" robotics \
  "rita sees only her team"
rc=0; as otto run --flavor a100.1x -- true 2>"$TMP/err" || rc=$?
expect_eq "$rc" 1 "a viewer may not submit"

# The reclaim: a ledger entry within about a minute of the start (a generous bound on a
# loaded machine, not a timing assertion), vision's work preempting robotics' borrowed sweeps.
until [ "$(g -o json preemptions list | jq '.items | length')" -ge 1 ]; do
  [ $((SECONDS - start)) -lt 120 ] || fail "no preemption in the first two minutes: $(g ps -a)"
  sleep 0.5
done
ledger=$(g -o json preemptions list)
entry=$(jq -c '.items[0]' <<<"$ledger")
vision=$(g -o json project show acme/vision | jq -r .id)
robotics=$(g -o json project show globex/robotics | jq -r .id)
expect_eq "$(jq -r .rule <<<"$entry")" reclaim "the ledger's rule"
expect_eq "$(jq -r .project_id <<<"$entry")" "$vision" "the preemptor is vision's"
expect_eq "$(jq -r '[.victims[].project_id] | unique | join(",")' <<<"$entry")" "$robotics" \
  "the victims are robotics'"
expect_eq "$(jq -r .gpu_milli <<<"$entry")" 8000 "eight GPUs reclaimed"
preemptor=$(jq -r .preemptor_id <<<"$entry")
expect_eq "$(g -o json show "$preemptor" | jq -r .workload.name)" detector-train "the preemptor"
wait_state "$preemptor" running 60
expect_contains "$(g -o json show "$preemptor" | jq -r '.events[].message')" \
  "admitted as owned (P1) work (automatic: within the project's guarantee" \
  "no class given: the automatic class made vision's work owned"
expect_contains "$(as rita -o json ps | jq -r '.items[].reason')" \
  "automatic class: opportunistic (P2), beyond the project's guarantee" \
  "the requeued sweeps say they wait as opportunistic work"
victim=$(jq -r '.victims[-1].workload_id' <<<"$entry")
expect_contains "$(g -o json show "$victim" | jq -r '.events[].message')" \
  "preempted (rule reclaim" "the victim's events name the reclaim"
sweep4=$(g -o json ps --all | jq -r '.items[] | select(.name == "sweep-4") | .id')
wait_state "$sweep4" preempted 60
expect_contains "$(as rita -o json ps | jq -r '.items[].reason')" "waiting for 2 h100-80gb" \
  "the requeued sweeps say why they wait"

# Finished work is metered.
tokenize=$(g -o json ps --all | jq -r '.items[] | select(.name == "tokenize-1") | .id')
wait_state "$tokenize" succeeded 90
api GET "/v1/usage-records?workload_id=$tokenize" "$ADMIN_TOKEN"
expect_eq "$(jq '.items | length >= 1' <<<"$BODY")" true "the finished work's usage record"
expect_contains "$(as maria usage)" "nlp" "acme's usage this month"
expect_contains "$(as maria usage)" "total acme:" "usage totals name the organization"

# The manager view maria opens (the dashboard's #/manager): what it reads, for her org.
curl -fsS "$URL/ui/" >/dev/null || fail "the dashboard is not served"
api GET "/v1/inventory?org=acme" "$(tok maria)"
expect_eq "$HTTP_STATUS" 200 "maria reads acme's inventory"
expect_eq "$(jq '.items | length' <<<"$BODY")" 16 "acme owns two H100 nodes"
expect_eq "$(jq '[.items[] | select(.used_by.project == "vision")] | length' <<<"$BODY")" 8 \
  "vision's detector-train holds its node"

# Last month: imported as simulated history, each organization's invoice issued
# (the totals are worked out in demo-history.sh).
api GET "/v1/workloads?imported=true" "$ADMIN_TOKEN"
expect_eq "$(jq '[.items[] | select(.reason | test("simulated"))] | length' <<<"$BODY")" 7 \
  "the imported workloads, labelled simulated"
for ot in acme:766960000 globex:69600000; do
  api GET "/v1/invoices?org_id=$(g -o json org show "${ot%%:*}" | jq -r .id)" "$ADMIN_TOKEN"
  expect_eq "$(jq -r '.items[0].state' <<<"$BODY")" issued "${ot%%:*}'s invoice of last month"
  expect_eq "$(jq -r '.items[0].total_micros' <<<"$BODY")" "${ot#*:}" "${ot%%:*}'s invoice total"
done

# Every command of the README's tour block, as written there (against this daemon), from a
# directory that holds what scripts/run.sh leaves beside the store. Any that fails fails this.
mkdir "$TMP/tour"
cp "$TMP/token" "$TMP/tour/.gpuaas-admin-token"
cp "$users" "$TMP/tour/gpuaas-demo-users"
awk '/^## Five-minute tour/ { t = 1 } t && /^```sh/ { b = 1; next } b && /^```/ { exit } b' \
  "$GPUAAS_SOURCE_DIR/README.md" | sed "s#http://127.0.0.1:8080#$URL#g" >"$TMP/tour/tour.sh"
[ "$(grep -c '^as \|^gpuaas ' "$TMP/tour/tour.sh")" -ge 20 ] || fail "the tour block was not found"
for cmd in "as rita ps" "gpuaas preemptions" "gpuaas timeline" "as maria cost" \
  "as maria invoice show"; do
  grep -q "^$cmd" "$TMP/tour/tour.sh" || fail "the tour lost '$cmd'"
done
mkdir "$TMP/tour/bin"
ln -s "$GPUAAS" "$TMP/tour/bin/gpuaas"
(cd "$TMP/tour" && PATH=$TMP/tour/bin:$PATH bash -Eeuo pipefail -c \
  'trap '\''echo "tour command failed: $BASH_COMMAND" >&2'\'' ERR; . ./tour.sh' \
  >"$TMP/tour.out" 2>&1) || fail "the README's tour: $(tail -5 "$TMP/tour.out")"
out=$(cat "$TMP/tour.out")
expect_contains "$out" "rule reclaim" "the tour shows the reclaim"
expect_contains "$out" "766.96 USD" "the tour shows last month's invoice"
expect_contains "$out" "refused: otto may only look" "the tour shows a refusal"
check_daemon_alive
stop_daemon
echo "tour: ok"
