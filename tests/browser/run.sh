#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The dashboard in a real browser: starts gpuaasd on a simulated fleet (two
# nodes of eight H100s; teams A and B each own one and may borrow the other;
# team-c of another organization, globex, may borrow team-a's), makes users
# of every role (maria: org-admin and manager of acme; pat: project-admin of
# team-a; alice: member of team-a; vic: viewer of acme; bob and carol: members
# of team-b and team-c), prices, a finished month imported through the API
# (POST /v1/history) and its issued invoice, and fills the fleet with opportunistic work (carol's 2
# GPUs, which can only go to team-a's node, then bob's 14); then
# dashboard.test.js drives Debian's Chromium through playwright-core.
# Screenshots go to $GPUAAS_UI_ARTIFACTS (default: <build>/ui-artifacts).
#
# Missing node, npm or chromium is a failure, not a skip: scripts/deps.sh
# installs them. playwright-core (pinned in package-lock.json) is installed
# with npm ci into <build>/browser-node once, and again when the lock changes.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../e2e/lib.sh"
. "$HERE/../e2e/sim_setup.sh"

BUILD_DIR=${GPUAAS_BUILD_DIR:?set GPUAAS_BUILD_DIR to the build tree}
ARTIFACTS=${GPUAAS_UI_ARTIFACTS:-$BUILD_DIR/ui-artifacts}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
NODE_DIR=$BUILD_DIR/browser-node

command -v node >/dev/null || fail "node is not installed: run 'bash scripts/deps.sh' (Debian package nodejs)"
command -v npm >/dev/null || fail "npm is not installed: run 'bash scripts/deps.sh' (Debian package npm)"
[ -x "$CHROMIUM" ] || fail "no Chromium at $CHROMIUM: run 'bash scripts/deps.sh' (Debian package chromium)"

if [ ! -f "$NODE_DIR/node_modules/playwright-core/package.json" ] ||
  ! cmp -s "$HERE/package-lock.json" "$NODE_DIR/package-lock.json"; then
  mkdir -p "$NODE_DIR"
  cp "$HERE/package.json" "$HERE/package-lock.json" "$NODE_DIR/"
  (cd "$NODE_DIR" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error) ||
    fail "npm ci of playwright-core failed (is the npm registry reachable?)"
fi
rm -rf "$ARTIFACTS"
mkdir -p "$ARTIFACTS"

GRACE=3
start_daemon "$TMP/gpuaas.db" --sim-fleet "$FLEET" --grace-s "$GRACE"
setup_teams
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
"${g[@]}" org update acme --display-name "Acme Research" --cost-center CC-100 >/dev/null
"${g[@]}" org create globex >/dev/null
"${g[@]}" project create team-c --org globex >/dev/null
"${g[@]}" pool update pool-a --access-projects team-b,team-c >/dev/null
# (a lending limit as large as the pool: shown, binding nothing)
"${g[@]}" pool update pool-b --lending-limit 8 >/dev/null
"${g[@]}" quota create --project team-c --gpu-class h100 --limit-milli 16000 >/dev/null
for u in alice bob maria pat vic carol; do "${g[@]}" user create "$u" >/dev/null; done
"${g[@]}" org update acme --manager maria >/dev/null
"${g[@]}" role-binding create --user alice --role member --project team-a >/dev/null
"${g[@]}" role-binding create --user bob --role member --project team-b >/dev/null
"${g[@]}" role-binding create --user maria --role org-admin --org acme >/dev/null
"${g[@]}" role-binding create --user pat --role project-admin --project team-a >/dev/null
"${g[@]}" role-binding create --user vic --role viewer --org acme >/dev/null
"${g[@]}" role-binding create --user carol --role member --project team-c >/dev/null
token_of() { "${g[@]}" -o json token create --user "$1" --name browser | jq -r .token; }
ALICE=$(token_of alice)
BOB=$(token_of bob)
MARIA=$(token_of maria)
PAT=$(token_of pat)
VIC=$(token_of vic)
CAROL=$(token_of carol)
PROJECT_C=$("${g[@]}" -o json project show team-c | jq -r .id)
ORG=$("${g[@]}" -o json org show acme | jq -r .id)

# A finished month to invoice, made through the API: last month's 3 GPU-hours of
# team-a imported as history (POST /v1/history: labelled simulated, metered into the
# ledger as the engine meters a run) with the price versions in force since that month
# (the import may carry versions of the past while no usage of their flavors is
# metered), then issued. A short owned run of team-a this month follows.
LAST=$(date -u -d "$(date -u +%Y-%m-01) -1 month" +%Y-%m)
api POST /v1/history "$ADMIN_TOKEN" "$(jq -nc --arg from "${LAST}-01T00:00:00Z" \
  --arg s "${LAST}-10T08:00:00Z" --arg e "${LAST}-10T11:00:00Z" \
  --argjson f1 "$FLAVOR_1X" --argjson f4 "$FLAVOR_4X" --argjson p "$PROJECT_A" \
  '{prices: [{flavor_id: $f1, currency: "USD", price_per_hour_micros: 2500000, effective_from: $from},
             {flavor_id: $f4, currency: "USD", price_per_hour_micros: 10000000, effective_from: $from}],
    workloads: [{project_id: $p, flavor_id: $f1, name: "last-month", priority_class: "owned",
                 started_at: $s, finished_at: $e}]}')"
expect_eq "$HTTP_STATUS" 201 "importing $LAST's work: $BODY"
HISTORY=$(jq -r '.workload_ids[0]' <<<"$BODY")
api GET "/v1/workloads/$HISTORY" "$ADMIN_TOKEN"
expect_eq "$(jq -r .imported <<<"$BODY")" true "the imported workload says so: $BODY"
old=$(submit "$PROJECT_A" "$FLAVOR_1X" owned 1)
wait_state "$old" succeeded 20
api GET /v1/ledger/verify "$ADMIN_TOKEN"
expect_eq "$(jq -r .ok <<<"$BODY")" true "the ledger verifies with last month's record: $BODY"
api POST /v1/invoices/issue "$ADMIN_TOKEN" "{\"org_id\":$ORG,\"period\":\"$LAST\"}"
expect_eq "$HTTP_STATUS" 201 "issuing $LAST: $BODY"
INVOICE=$(jq -r '.items[0].number' <<<"$BODY")

# Carol's 2 opportunistic GPUs can only go to pool-a (the one her team may borrow); then bob
# fills the other 14: 8 on his team's node, 6 borrowed from team-a.
for i in 1 2; do
  api POST /v1/workloads "$CAROL" "{\"project_id\":$PROJECT_C,\"flavor_id\":$FLAVOR_1X,\"priority_class\":\"opportunistic\",\"name\":\"globex-$i\",\"duration_s\":3600,\"command\":\"python eval.py\"}"
  expect_eq "$HTTP_STATUS" 201 "carol's submit $i"
done
deadline=$((SECONDS + 20))
until [ "$(sqlite3 "$TMP/gpuaas.db" "SELECT count(*) FROM allocations WHERE ended_ms IS NULL;")" = 2 ]; do
  [ $SECONDS -lt $deadline ] || fail "carol's 2 workloads did not start"
  sleep 0.2
done
for i in $(seq 14); do
  api POST /v1/workloads "$BOB" "{\"project_id\":$PROJECT_B,\"flavor_id\":$FLAVOR_1X,\"priority_class\":\"opportunistic\",\"name\":\"sweep-$i\",\"duration_s\":3600,\"command\":\"python sweep.py --trial $i\"}"
  expect_eq "$HTTP_STATUS" 201 "bob's submit $i"
done
deadline=$((SECONDS + 20))
until [ "$(sqlite3 "$TMP/gpuaas.db" "SELECT count(*) FROM allocations WHERE ended_ms IS NULL;")" = 16 ]; do
  [ $SECONDS -lt $deadline ] || fail "bob's 14 workloads did not all start"
  sleep 0.2
done

jq -n --arg url "$URL" --arg admin "$ADMIN_TOKEN" --arg alice "$ALICE" --arg bob "$BOB" \
  --arg maria "$MARIA" --arg pat "$PAT" --arg vic "$VIC" --arg carol "$CAROL" \
  --arg artifacts "$ARTIFACTS" --arg chromium "$CHROMIUM" \
  --arg invoice "$INVOICE" --arg last "$LAST" --argjson org "$ORG" \
  --argjson flavor4x "$FLAVOR_4X" --argjson projectA "$PROJECT_A" --argjson grace "$GRACE" \
  --argjson history "$HISTORY" \
  '{url: $url, tokens: {admin: $admin, alice: $alice, bob: $bob, maria: $maria, pat: $pat,
      vic: $vic, carol: $carol},
    artifacts: $artifacts, chromium: $chromium, invoice: $invoice, lastPeriod: $last,
    org: $org, flavor4x: $flavor4x, projectA: $projectA, grace: $grace, history: $history}' >"$TMP/env.json"

start=$SECONDS
NODE_PATH=$NODE_DIR/node_modules node "$HERE/dashboard.test.js" "$TMP/env.json" ||
  fail "browser test failed (screenshots in $ARTIFACTS)"
stop_daemon
echo "browser: ok in $((SECONDS - start)) s; screenshots in $ARTIFACTS"
