#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Metering through the daemon and the CLI: work on a simulated fleet is
# metered into the ledger, rated with an effective-dated price (P2 at its
# multiplier), shown by `gpuaas usage` and in a draft invoice; an enforced,
# spent budget refuses new opportunistic work (owned work still goes); a month
# still running cannot be issued; another tenant sees none of it; the ledger
# verifies.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sim_setup.sh"

start_daemon "$TMP/gpuaas.db" --sim-fleet "$FLEET" --grace-s 1
setup_teams
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
yesterday=$(date -u -d "-1 day" +%Y-%m-%dT%H:%M:%SZ)
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
month=$(date -u +%Y-%m)

# A price may not start in the past: it would re-rate usage already metered.
api POST /v1/prices "$ADMIN_TOKEN" "{\"flavor_id\":$FLAVOR_4X,\"currency\":\"EUR\",\"price_per_hour_micros\":3600000000,\"effective_from\":\"$yesterday\"}"
expect_eq "$HTTP_STATUS" 400 "a price starting yesterday"
expect_contains "$BODY" "in the past" "the refusal says why"
# 3600 EUR per replica-hour: 1 EUR a second owned, 0.60 opportunistic.
api POST /v1/prices "$ADMIN_TOKEN" "{\"flavor_id\":$FLAVOR_4X,\"currency\":\"EUR\",\"price_per_hour_micros\":3600000000,\"effective_from\":\"$now\"}"
expect_eq "$HTTP_STATUS" 201 "price version"
api POST /v1/prices "$ADMIN_TOKEN" "{\"flavor_id\":$FLAVOR_4X,\"currency\":\"EUR\",\"minor_digits\":3,\"price_per_hour_micros\":1,\"effective_from\":\"2030-01-01T00:00:00Z\"}"
expect_eq "$HTTP_STATUS" 400 "a second number of decimals for EUR"

w=$(submit "$PROJECT_B" "$FLAVOR_4X" opportunistic 2)
wait_state "$w" succeeded 20

out=$("${g[@]}" usage --project team-b) || fail "usage: $out"
expect_contains "$out" "h100.4x" "usage lists the flavor"
expect_contains "$out" "opportunistic" "usage lists the class"
expect_contains "$out" "EUR" "usage has the currency"
api GET "/v1/usage?project_id=$PROJECT_B" "$ADMIN_TOKEN"
amount=$(jq -r '.items[0].amount_micros' <<<"$BODY")
seconds=$(jq -r '.items[0].seconds' <<<"$BODY")
expect_eq "$(jq -r '.items[0].mult_ppm' <<<"$BODY")" 600000 "P2 multiplier"
[ "$seconds" -ge 2 ] || fail "2 s of work metered as $seconds s"
# Rounded per line to the cent, half-even, from 0.6 EUR per second.
expect_eq "$((amount % 10000))" 0 "amount in whole cents"
[ "$amount" -ge 1200000 ] && [ "$amount" -le 1400000 ] || fail "amount $amount for ~2 s at 0.60/s"

out=$("${g[@]}" invoice draft --org acme) || fail "draft: $out"
expect_contains "$out" "(draft)" "draft invoice"
expect_contains "$out" "team-b" "draft lists the project"
# A P2 line shows what its hour cost (3600 x 0.60), not the list price, and the multiplier.
line=$(grep 'opportunistic' <<<"$out")
expect_contains "$line" "2160.000000" "the P2 line's effective unit price"
expect_contains "$line" "0.60x" "the P2 line's multiplier"
case $line in *3600.000000*) fail "the P2 line shows the list price: $line" ;; esac
out=$("${g[@]}" invoice issue --org acme --period "$month" 2>&1) && fail "issued a running month: $out"
expect_contains "$out" "has not ended" "issuing this month"

# A budget of 1 EUR, enforced: spent, so new P2 work is refused; owned work is not.
api POST /v1/budgets "$ADMIN_TOKEN" "{\"project_id\":$PROJECT_B,\"money_micros\":1000000,\"currency\":\"EUR\",\"enforce\":true}"
expect_eq "$HTTP_STATUS" 201 "budget"
api POST /v1/workloads "$ADMIN_TOKEN" "{\"project_id\":$PROJECT_B,\"flavor_id\":$FLAVOR_4X,\"priority_class\":\"opportunistic\",\"duration_s\":1}"
expect_eq "$HTTP_STATUS" 403 "P2 work with a spent budget"
expect_contains "$BODY" "spent" "the refusal says why"
api POST /v1/workloads "$ADMIN_TOKEN" "{\"project_id\":$PROJECT_B,\"flavor_id\":$FLAVOR_4X,\"priority_class\":\"owned\",\"duration_s\":1}"
expect_eq "$HTTP_STATUS" 201 "owned work with a spent budget"

# Another tenant's viewer sees none of it.
"${g[@]}" org create other >/dev/null
api POST /v1/users "$ADMIN_TOKEN" '{"name":"eve"}'
eve=$(jq -r .id <<<"$BODY")
other=$("${g[@]}" -o json org show other | jq -r .id)
acme=$("${g[@]}" -o json org show acme | jq -r .id)
api POST /v1/role-bindings "$ADMIN_TOKEN" "{\"user_id\":$eve,\"role\":\"viewer\",\"org_id\":$other}"
api POST /v1/tokens "$ADMIN_TOKEN" "{\"user_id\":$eve}"
eve_token=$(jq -r .token <<<"$BODY")
api GET "/v1/invoices/draft?org_id=$acme" "$eve_token"
expect_eq "$HTTP_STATUS" 404 "another tenant's draft"
api GET "/v1/usage?project_id=$PROJECT_B" "$eve_token"
expect_eq "$HTTP_STATUS" 404 "another tenant's usage"
api GET "/v1/usage" "$eve_token"
expect_eq "$(jq '.items | length' <<<"$BODY")" 0 "usage seen by another tenant"
api GET "/v1/usage-records" "$eve_token"
expect_eq "$(jq '.items | length' <<<"$BODY")" 0 "ledger records seen by another tenant"
api POST /v1/invoices/issue "$eve_token" "{\"org_id\":$other,\"period\":\"2026-01\"}"
expect_eq "$HTTP_STATUS" 403 "a viewer issuing"
api PATCH "/v1/budgets/1" "$eve_token" '{"enforce":false}'
expect_eq "$HTTP_STATUS" 404 "another tenant's budget"

# Showback: each pool's cost (2.00 per GPU-hour) is used + idle, and adds up to its capacity;
# used and idle are rounded to the cent once each, so the total is within 0.01 of the exact cost.
api GET "/v1/cost?by=pool" "$ADMIN_TOKEN"
expect_eq "$HTTP_STATUS" 200 "cost by pool"
expect_eq "$(jq '.items | length' <<<"$BODY")" 2 "pools in the showback"
jq -c '.items[]' <<<"$BODY" | while read -r p; do
  used=$(jq .used_micros <<<"$p"); idle=$(jq .idle_micros <<<"$p"); total=$(jq .total_micros <<<"$p")
  expect_eq "$((used + idle))" "$total" "used + idle of $(jq -r .name <<<"$p")"
  cap=$(jq -r .capacity_gpu_hours <<<"$p" | tr -d .) # milli-GPU-hours
  # capacity counts from the pool's creation (this test's first seconds) up to now only;
  # $SECONDS is truncated, so the script has run for less than SECONDS + 1 whole seconds
  [ $((10#$cap)) -le $((8000 * (SECONDS + 1) / 3600 + 1)) ] ||
    fail "capacity $cap milli-GPU-h for 8 GPUs over less than $((SECONDS + 1)) s"
  expect_eq "$((used % 10000)):$((idle % 10000))" "0:0" "used and idle in whole cents"
  diff=$((total - 10#$cap * 2000))
  [ "${diff#-}" -le 12000 ] || fail "pool cost $total micros for $cap milli-GPU-hours at 2.00"
done
alloc_b=$(jq -r '[.items[] | select(.name == "pool-b") | .allocated_gpu_hours][0]' <<<"$BODY")
[ "$alloc_b" != 0.000 ] || fail "pool-b, where team-b ran, shows no used GPU time"
out=$("${g[@]}" cost --by project) || fail "cost: $out"
expect_contains "$out" "team-b" "cost by project"
api GET "/v1/cost?by=org" "$eve_token"
expect_eq "$(jq '.items | length' <<<"$BODY")" 0 "costs seen by another tenant"

# Last month's work imported through the API (gpuaas history import: labelled simulated,
# metered into the ledger) at a price version of last month, then invoiced: 2 replicas x
# 1.5 h x 1.00 EUR. Only admins may import; a refused import writes nothing.
last=$(date -u -d "$(date -u +%Y-%m-01) -1 month" +%Y-%m)
jq -n --argjson f "$FLAVOR_1X" --argjson p "$PROJECT_A" --arg m "$last" \
  '{prices: [{flavor_id: $f, currency: "EUR", price_per_hour_micros: 1000000,
              effective_from: ($m + "-01T00:00:00Z")}],
    workloads: [{project_id: $p, flavor_id: $f, replicas: 2, name: "last-month",
                 started_at: ($m + "-03T10:00:00Z"), finished_at: ($m + "-03T11:30:00Z")}]}' \
  >"$TMP/history.json"
out=$("$GPUAAS" --server "$URL" --token "$eve_token" history import "$TMP/history.json" 2>&1) &&
  fail "another tenant's org-admin imported history: $out"
expect_contains "$out" "only admins" "the refusal of a non-admin import"
out=$("${g[@]}" history import "$TMP/history.json") || fail "history import: $out"
expect_contains "$out" "imported 1 workload " "history import"
out=$("${g[@]}" history import "$TMP/history.json" 2>&1) &&
  fail "the same import twice (its price version exists now): $out"
api GET "/v1/workloads?imported=true" "$ADMIN_TOKEN"
expect_eq "$(jq '.items | length' <<<"$BODY")" 1 "imported workloads after a refused second import"
expect_eq "$(jq -r '.items[0].state' <<<"$BODY")" succeeded "the imported workload's state"
api POST /v1/invoices/issue "$ADMIN_TOKEN" "{\"org_id\":$acme,\"period\":\"$last\"}"
expect_eq "$HTTP_STATUS" 201 "issuing $last: $BODY"
expect_eq "$(jq '.items[0].total_micros' <<<"$BODY")" 3000000 "last month's invoice total"

out=$("${g[@]}" usage verify) || fail "usage verify: $out"
expect_contains "$out" "ledger ok" "ledger verify"
# It says what it checked: closed runs' records; open runs are not in the ledger yet.
expect_contains "$out" "closed usage records checked" "what usage verify checked"
expect_contains "$out" "not in the ledger yet" "usage verify on runs still open"
stop_daemon
echo "billing: ok"
