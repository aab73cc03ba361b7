#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's five-minute tour, through the real CLI against the real
# daemon: an organization, a project, a user with a role, a GPU class, a
# flavor and a quota; then the user logs in and sees only their tenant.
# Also runs the demo-fleet script the first README command uses.
. "$(dirname "$0")/lib.sh"

start_daemon
g() { "$GPUAAS" "$@"; }

g login --server "$URL" --token "$ADMIN_TOKEN" >/dev/null
[ "$(stat -c %a "$GPUAAS_CONFIG")" = 600 ] || fail "CLI config is not mode 0600"
expect_contains "$(g whoami)" "admin" "whoami as admin"

g org create acme --display-name "Acme Research" --cost-center CC-100 >/dev/null
g org create rival >/dev/null
g project create vision --org acme >/dev/null
g project create secret --org rival >/dev/null
g user create alice --email alice@example.com >/dev/null
g role-binding create --user alice --role member --project vision >/dev/null
g gpu-class create h100-80gb --model "NVIDIA H100 80GB HBM3" --memory-mib 81559 >/dev/null
g flavor create h100.1x --gpu-class h100-80gb --gpu-milli 1000 --vcpus 16 \
  --memory-mib 131072 --price-per-hour-micros 2500000 >/dev/null
g quota create --project vision --gpu-class h100-80gb --guaranteed-milli 8000 \
  --limit-milli 16000 >/dev/null

json=$(g -o json org show acme)
expect_eq "$(jq -r .cost_center <<<"$json")" CC-100 "org cost center"
expect_eq "$(g -o json quota list | jq -r '.items[0].limit_milli')" 16000 "quota limit"

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
projects=$(alice -o json project list | jq -r '[.items[].name] | join(",")')
expect_eq "$projects" vision "alice sees only her project"
orgs=$(alice -o json org list | jq -r '[.items[].name] | join(",")')
expect_eq "$orgs" acme "alice sees only the organization above her project"
rc=0; alice org create other 2>"$TMP/err" || rc=$?
expect_eq "$rc" 1 "alice may not create organizations"
expect_contains "$(cat "$TMP/err")" "role does not allow" "forbidden message"
rc=0; alice project show rival/secret 2>"$TMP/err" || rc=$?
expect_eq "$rc" 1 "alice cannot see another tenant's project"

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

# The simulated demo fleet of the README's first command, on a fresh store.
stop_daemon
start_daemon "$TMP/demo.db"
g login --server "$URL" --token "$ADMIN_TOKEN" >/dev/null
GPUAAS_SERVER=$URL GPUAAS_TOKEN=$ADMIN_TOKEN bash "$GPUAAS_SOURCE_DIR/scripts/demo-fleet.sh" \
  "$GPUAAS" >/dev/null || fail "demo-fleet.sh failed"
expect_eq "$(g -o json gpu list --limit 1000 | jq '.items | length')" 32 "demo GPUs"
expect_eq "$(g -o json cluster show demo-sim | jq -r .labels.simulated)" true "demo is labelled"
stop_daemon
echo "tour: ok"
