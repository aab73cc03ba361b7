#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Shared by the scheduler end-to-end tests: a simulated fleet of two nodes of
# eight H100s (racks a and b), teams A and B that each own one node's pool
# and may borrow the other's, and flavors of 1 and 4 GPUs. Source after
# lib.sh; start the daemon with: start_daemon "$TMP/gpuaas.db" --sim-fleet "$FLEET"
FLEET=$TMP/fleet.json
cat >"$FLEET" <<'JSON'
{"nodes":[
 {"name":"node-a","cpu_milli":64000,"memory_mib":262144,"gpus":8,"model":"H100","labels":{"rack":"a"}},
 {"name":"node-b","cpu_milli":64000,"memory_mib":262144,"gpus":8,"model":"H100","labels":{"rack":"b"}}
]}
JSON

# setup_teams: creates the tenants, pools, quotas and flavors (as the admin, via the CLI).
setup_teams() {
  local g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
  "${g[@]}" org create acme >/dev/null
  "${g[@]}" project create team-a --org acme >/dev/null
  "${g[@]}" project create team-b --org acme >/dev/null
  "${g[@]}" pool create pool-a --owner-project team-a --cluster sim --node-selector rack=a \
    --cost-per-gpu-hour-micros 2000000 >/dev/null
  "${g[@]}" pool create pool-b --owner-project team-b --cluster sim --node-selector rack=b \
    --access-projects team-a --cost-per-gpu-hour-micros 2000000 >/dev/null
  "${g[@]}" pool update pool-a --access-projects team-b >/dev/null
  "${g[@]}" quota create --project team-a --gpu-class h100 --limit-milli 16000 >/dev/null
  "${g[@]}" quota create --project team-b --gpu-class h100 --limit-milli 16000 >/dev/null
  "${g[@]}" flavor create h100.1x --gpu-class h100 --gpu-milli 1000 --vcpus 4 \
    --memory-mib 16384 --price-per-hour-micros 2500000 >/dev/null
  "${g[@]}" flavor create h100.4x --gpu-class h100 --gpu-milli 4000 --vcpus 16 \
    --memory-mib 65536 --price-per-hour-micros 10000000 >/dev/null
  PROJECT_A=$("${g[@]}" -o json project show team-a | jq -r .id)
  PROJECT_B=$("${g[@]}" -o json project show team-b | jq -r .id)
  FLAVOR_1X=$("${g[@]}" -o json flavor show h100.1x | jq -r .id)
  FLAVOR_4X=$("${g[@]}" -o json flavor show h100.4x | jq -r .id)
}

# submit PROJECT FLAVOR CLASS DURATION_S [extra json]: prints the new workload's id.
submit() {
  local extra=${5:-}
  api POST /v1/workloads "$ADMIN_TOKEN" "{\"project_id\":$1,\"flavor_id\":$2,\"priority_class\":\"$3\",\"duration_s\":$4$extra}"
  [ "$HTTP_STATUS" = 201 ] || fail "submit: $HTTP_STATUS $BODY"
  jq -r .id <<<"$BODY"
}
