#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's five-minute tour, through the real CLI against the real
# daemon, on the simulated demo fleet the README's first command creates:
# an organization, a project that owns a pool, a user with a role and a
# token; the user sees only their tenant and launches work that runs.
. "$(dirname "$0")/lib.sh"

start_daemon
g() { "$GPUAAS" "$@"; }
GPUAAS_SERVER=$URL GPUAAS_TOKEN=$ADMIN_TOKEN bash "$GPUAAS_SOURCE_DIR/scripts/demo-fleet.sh" \
  "$GPUAAS" >/dev/null || fail "demo-fleet.sh failed"

g login --server "$URL" --token "$ADMIN_TOKEN" >/dev/null
[ "$(stat -c %a "$GPUAAS_CONFIG")" = 600 ] || fail "CLI config is not mode 0600"
expect_contains "$(g whoami)" "admin" "whoami as admin"
expect_eq "$(g -o json gpu list --limit 1000 | jq '.items | length')" 32 "demo GPUs"
expect_eq "$(g -o json cluster show demo-sim | jq -r .labels.simulated)" true "demo is labelled"
expect_contains "$(g flavor list)" "h100.8x" "catalog"

g org create acme --display-name "Acme Research" --cost-center CC-100 >/dev/null
g org create rival >/dev/null
g project create vision --org acme >/dev/null
g project create secret --org rival >/dev/null
g user create alice --email alice@example.com >/dev/null
g role-binding create --user alice --role member --project vision >/dev/null
g pool create vision-h100 --owner-project vision --cluster demo-sim --node-selector rack=r0 \
  --cost-per-gpu-hour-micros 1800000 >/dev/null
g quota create --project vision --gpu-class h100-80gb --limit-milli 16000 >/dev/null
expect_eq "$(g -o json org show acme | jq -r .cost_center)" CC-100 "org cost center"
expect_contains "$(g capacity)" "h100-80gb" "capacity view"

# A bad value is a usage error before any request; a server refusal is exit 1.
rc=0; g project create x --org acme --weight 0 2>"$TMP/err" || rc=$?
expect_eq "$rc" 2 "exit status for an out-of-range value"
rc=0; g project create vision --org acme 2>"$TMP/err" || rc=$?
expect_eq "$rc" 1 "exit status for a conflict"
expect_contains "$(cat "$TMP/err")" "already exists" "conflict message"

token=$(g -o json token create --user alice --name laptop | jq -r .token)
expect_contains "$token" gpa_ "alice's token"
alice() { GPUAAS_CONFIG=$TMP/alice.conf "$GPUAAS" "$@"; }
alice login --server "$URL" --token "$token" >/dev/null
expect_contains "$(alice whoami)" alice "whoami as alice"
expect_eq "$(alice -o json project list | jq -r '[.items[].name] | join(",")')" vision \
  "alice sees only her project"
expect_eq "$(alice -o json org list | jq -r '[.items[].name] | join(",")')" acme \
  "alice sees only the organization above her project"
rc=0; alice org create other 2>"$TMP/err" || rc=$?
expect_eq "$rc" 1 "alice may not create organizations"
expect_contains "$(cat "$TMP/err")" "role does not allow" "forbidden message"
rc=0; alice project show rival/secret 2>"$TMP/err" || rc=$?
expect_eq "$rc" 1 "alice cannot see another tenant's project"

# Alice launches work on the simulated fleet; it runs, and she can see where.
w1=$(alice -o json run --flavor h100.1x --duration 10m -- python train.py --epochs 3 | jq -r .id)
w2=$(alice -o json run --flavor h100.8x --owned --duration 1h -- python pretrain.py | jq -r .id)
deadline=$((SECONDS + 10))
until [ "$(alice -o json ps | jq '[.items[] | select(.state == "running")] | length')" = 2 ]; do
  [ $SECONDS -lt $deadline ] || fail "alice's work did not start: $(alice ps)"
  sleep 0.2
done
expect_contains "$(alice show "$w1")" "admitted" "show lists the admission event"
expect_contains "$(alice timeline)" "sim-node" "timeline shows the placement"
[ "$(alice -o json show "$w2" | jq '.allocations | length')" = 8 ] || fail "8x holds 8 GPUs"

# The work is metered while it runs: alice sees her project's usage; the admin the draft
# invoice, the showback and a whole ledger.
expect_contains "$(alice usage)" "h100.8x" "alice's usage"
expect_contains "$(g invoice draft --org acme)" "vision" "draft invoice"
expect_contains "$(g cost --by project)" "vision" "showback by project"
expect_contains "$(g usage verify)" "ledger ok" "ledger verify"

# Every change above is in the audit log, with its actor.
audit=$(g -o json audit list --resource projects --limit 1000)
expect_eq "$(jq '[.items[] | select(.action == "create")] | length' <<<"$audit")" 2 "project audits"
expect_eq "$(jq -r '.items[0].actor' <<<"$audit")" admin "audit actor"

# Revoking alice's token locks her out at once.
tid=$(g -o json token list --user alice | jq -r '.items[0].id')
g token revoke "$tid" >/dev/null
rc=0; alice whoami 2>"$TMP/err" || rc=$?
expect_eq "$rc" 1 "revoked token refused"
expect_contains "$(cat "$TMP/err")" "revoked" "revocation message"

# The demo's past month: demo-corp's work imported as simulated history and invoiced
# (USD: 2 x 12 h x 20 + 4 x 6 h x 2.5 x 0.6 + 8 h x 1.2 + 2 x 2 h x 1.3 x 0.6 + 12 h x 20).
GPUAAS_SERVER=$URL GPUAAS_TOKEN=$ADMIN_TOKEN bash "$GPUAAS_SOURCE_DIR/scripts/demo-history.sh" \
  "$GPUAAS" >/dev/null || fail "demo-history.sh failed"
api GET "/v1/invoices?org_id=$("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN" -o json org show demo-corp | jq -r .id)" "$ADMIN_TOKEN"
expect_eq "$(jq -r '.items[0].total_micros' <<<"$BODY")" 768720000 "the demo's issued invoice of last month"
api GET "/v1/workloads?imported=true" "$ADMIN_TOKEN"
expect_eq "$(jq '[.items[] | select(.reason | test("simulated"))] | length' <<<"$BODY")" 5 \
  "the demo's imported workloads, labelled simulated"
stop_daemon
echo "tour: ok"
