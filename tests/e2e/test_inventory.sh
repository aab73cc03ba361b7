#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GPU inventory through the CLI: a team's spreadsheet imported (quoted
# fields, an unknown column, GPUs the fleet does not have), nothing written
# when any row is bad, the view joining fleet, ownership, manager, cost,
# state and who uses a GPU, filters (a manager's GPUs, transitively), what
# another tenant sees, and export -> import round trip.
. "$(dirname "$0")/lib.sh"

start_daemon
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
GPUAAS_SERVER=$URL GPUAAS_TOKEN=$ADMIN_TOKEN bash "$GPUAAS_SOURCE_DIR/scripts/demo-fleet.sh" \
  "$GPUAAS" >/dev/null || fail "demo-fleet.sh failed"
"${g[@]}" user create maria >/dev/null
"${g[@]}" user create eve >/dev/null
"${g[@]}" org create acme --manager maria >/dev/null
"${g[@]}" org create research --parent acme >/dev/null
"${g[@]}" org create other >/dev/null
"${g[@]}" project create vision --org research >/dev/null
"${g[@]}" role-binding create --user eve --role viewer --org other >/dev/null
"${g[@]}" pool create vision-h100 --owner-project vision --cluster demo-sim --node-selector rack=r0 \
  --cost-per-gpu-hour-micros 1800000 >/dev/null
eve=("$GPUAAS" --server "$URL" --token "$("${g[@]}" -o json token create --user eve | jq -r .token)")
uuid0=$("${g[@]}" -o json gpu list --limit 1 | jq -r '.items[0].uuid')

cat >"$TMP/gpus.csv" <<CSV
GPU,Model,Node,Site,Owner,Manager,Intended use,Colour
$uuid0,NVIDIA H100 80GB HBM3,sim-node-0,"eu-west, rack 3",vision,maria,training,red
GPU-00000000-1111-2222-3333-444444444444,Tesla V100-SXM2-16GB,old-box,lab,legacy,tom,"inference, ""batch""",blue
CSV
out=$("${g[@]}" inventory import "$TMP/gpus.csv" 2>&1) || fail "import: $out"
expect_contains "$out" "imported 2 rows (2 new, 0 updated)" "import counts"
expect_contains "$out" "'Colour' is not an inventory column" "unknown column warned"

# A bad row anywhere: nothing is written, every bad row is named.
printf 'GPU,Model\nGPU-00000000-1111-2222-3333-555555555555,x\nnot-a-uuid,y\n' >"$TMP/bad.csv"
rc=0; out=$("${g[@]}" inventory import "$TMP/bad.csv" 2>&1) || rc=$?
expect_eq "$rc" 1 "a bad spreadsheet"
expect_contains "$out" "row 3" "the bad row is named"
expect_eq "$("${g[@]}" -o json inventory-items list | jq '.items | length')" 2 "nothing half-written"
rc=0; "${eve[@]}" inventory import "$TMP/gpus.csv" >/dev/null 2>&1 || rc=$?
expect_eq "$rc" 1 "a viewer importing"

w=$("${g[@]}" -o json run --project vision --flavor h100.1x --duration 1h -- train | jq -r .id)
deadline=$((SECONDS + 10))
until [ "$("${g[@]}" -o json inventory --state allocated | jq '.items | length')" = 1 ]; do
  [ $SECONDS -lt $deadline ] || fail "the allocated GPU does not show"
  sleep 0.2
done
all=$("${g[@]}" -o json inventory)
expect_eq "$(jq '.items | length' <<<"$all")" 33 "32 fleet GPUs and 1 only the spreadsheet knows"
row=$(jq -c --arg u "$uuid0" '.items[] | select(.uuid == $u)' <<<"$all")
expect_eq "$(jq -r .site <<<"$row")" "eu-west, rack 3" "site from the spreadsheet"
expect_eq "$(jq -r .owner.name <<<"$row")" vision "owner from the pool"
expect_eq "$(jq -r .manager <<<"$row")" maria "manager of the owner's parent organization"
expect_eq "$(jq -r .cost_per_gpu_hour_micros <<<"$row")" 1800000 "cost"
legacy=$(jq -c '.items[] | select(.source == "import")' <<<"$all")
expect_eq "$(jq -r .gpu_class <<<"$legacy")" v100-16gb "model normalised to a class"
expect_eq "$(jq -r .state <<<"$legacy")" unknown "a GPU only the spreadsheet knows"
used=$("${g[@]}" -o json inventory --state allocated | jq -c '.items[0].used_by')
expect_eq "$(jq -r .workload_id <<<"$used")" "$w" "who uses the GPU"

expect_eq "$("${g[@]}" -o json inventory --manager maria | jq '.items | length')" 16 \
  "maria's GPUs (the pool of a project two levels under her organization)"
expect_eq "$("${g[@]}" -o json inventory --org research --class h100-80gb | jq '.items | length')" 16 \
  "filters"
expect_contains "$("${g[@]}" inventory --manager maria)" "vision" "the table"
expect_eq "$("${eve[@]}" -o json inventory | jq '.items | length')" 0 "another tenant sees none"
rc=0; "${eve[@]}" inventory --org acme >/dev/null 2>&1 || rc=$?
expect_eq "$rc" 1 "another tenant's organization"

# Export, then import what was exported: the same rows, updated in place.
"${g[@]}" inventory export >"$TMP/export.csv" || fail "export"
expect_contains "$(head -1 "$TMP/export.csv")" "gpu,model,node,cluster,site,owner,manager" "header"
grep -q '"eu-west, rack 3"' "$TMP/export.csv" || fail "quoted site lost in export"
out=$("${g[@]}" inventory import "$TMP/export.csv") || fail "re-import: $out"
expect_contains "$out" "(31 new, 2 updated)" "re-import of the export"
stop_daemon
echo "inventory: ok"
