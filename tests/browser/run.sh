#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The dashboard in a real browser: starts gpuaasd on a simulated fleet (two
# nodes of eight H100s; teams A and B each own one and may borrow the other;
# team-c of another organization, globex, may borrow team-a's), makes users
# of every role (maria: org-admin and manager of acme; pat: project-admin of
# team-a; alice: member of team-a; vic: viewer of acme; bob and carol: members
# of team-b and team-c), prices, a finished month with one ledger record and
# its issued invoice, and fills the fleet with opportunistic work (carol's 2
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
command -v b2sum >/dev/null || fail "b2sum (coreutils) is missing"

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

# A finished month to invoice: a short owned run of team-a, then (daemon
# stopped) prices in force since 2020 (the API takes none that starts in the
# past) and one more ledger record of 3 GPU-hours in the previous month,
# chained exactly as src/billing/ledger.c does: BLAKE2b-256 of the previous
# hash and the record's canonical bytes.
old=$(submit "$PROJECT_A" "$FLAVOR_1X" owned 1)
wait_state "$old" succeeded 20
stop_daemon
LAST=$(date -u -d "$(date -u +%Y-%m-01) -1 month" +%Y-%m)
start_ms=$(($(date -u -d "${LAST}-10T08:00:00Z" +%s) * 1000))
end_ms=$((start_ms + 3 * 3600 * 1000))
head=$(sqlite3 "$TMP/gpuaas.db" "SELECT value FROM meta WHERE key = 'usage_ledger_head';")
seq=$((${head%% *} + 1))
prev=${head#* }
hex=$(printf '47555231%016x%016x%016x%016x%02x%08x%08x%016x%016x%016x%016x' \
  "$seq" "$ORG" "$PROJECT_A" "$FLAVOR_1X" 0 1 1000 "$start_ms" "$end_ms" "$old" "$start_ms")
hash=$(printf '%s%s' "$prev" "$hex" | perl -ne 'print pack("H*", $_)' | b2sum -l 256 | cut -c1-64)
sqlite3 "$TMP/gpuaas.db" "BEGIN;
  INSERT INTO prices (flavor_id, currency, minor_digits, price_per_hour_micros, owned_mult_ppm,
    opportunistic_mult_ppm, effective_from, created_at)
  VALUES ($FLAVOR_1X, 'USD', 2, 2500000, 1000000, 600000, 1577836800, 1577836800),
    ($FLAVOR_4X, 'USD', 2, 10000000, 1000000, 600000, 1577836800, 1577836800);
  INSERT INTO usage_records (seq, workload_id, org_id, project_id, flavor_id, priority_class,
    replicas, gpu_milli, run_started_ms, started_ms, ended_ms, prev_hash, hash, recorded_ms)
  VALUES ($seq, $old, $ORG, $PROJECT_A, $FLAVOR_1X, 'owned', 1, 1000, $start_ms, $start_ms,
    $end_ms, '$prev', '$hash', $end_ms);
  UPDATE meta SET value = '$seq $hash' WHERE key = 'usage_ledger_head';
  COMMIT;"
start_daemon "$TMP/gpuaas.db" --sim-fleet "$FLEET" --grace-s "$GRACE"
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
  '{url: $url, tokens: {admin: $admin, alice: $alice, bob: $bob, maria: $maria, pat: $pat,
      vic: $vic, carol: $carol},
    artifacts: $artifacts, chromium: $chromium, invoice: $invoice, lastPeriod: $last,
    org: $org, flavor4x: $flavor4x, projectA: $projectA, grace: $grace}' >"$TMP/env.json"

start=$SECONDS
NODE_PATH=$NODE_DIR/node_modules node "$HERE/dashboard.test.js" "$TMP/env.json" ||
  fail "browser test failed (screenshots in $ARTIFACTS)"
stop_daemon
echo "browser: ok in $((SECONDS - start)) s; screenshots in $ARTIFACTS"
