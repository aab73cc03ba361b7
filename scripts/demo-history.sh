#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Gives the simulated demo fleet (demo-fleet.sh) a past: an organization
# 'demo-corp' with a project 'demo-history', last month's finished work of it
# imported through the API (gpuaas history import: labelled simulated, placed
# on the demo GPUs that were free then, metered into the usage ledger) at the
# demo prices, and that month's invoice issued. Nothing is written behind the
# daemon. Usage: GPUAAS_SERVER=... GPUAAS_TOKEN=... demo-history.sh path/to/gpuaas
set -euo pipefail
cli=${1:-gpuaas}
g() { "$cli" "$@"; }
id_of() { g -o json "$1" show "$2" | jq -r .id; }

g org create demo-corp --display-name "Demo Corp (simulated history)" --cost-center DEMO-1 \
  >/dev/null
g project create demo-history --org demo-corp \
  --description "last month's work, imported as simulated history" >/dev/null
last=$(date -u -d "$(date -u +%Y-%m-01) -1 month" +%Y-%m)
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# The demo list prices, in force since the start of last month (USD per replica-hour).
jq -n --arg m "$last" --argjson p "$(id_of project demo-history)" \
  --argjson h1 "$(id_of flavor h100.1x)" --argjson h8 "$(id_of flavor h100.8x)" \
  --argjson hh "$(id_of flavor h100.half)" --argjson a1 "$(id_of flavor a100.1x)" '
  def price(f; micros): {flavor_id: f, currency: "USD", price_per_hour_micros: micros,
                         effective_from: ($m + "-01T00:00:00Z")};
  def run(f; cls; n; day; from; to; name):
    {project_id: $p, flavor_id: f, priority_class: cls, replicas: n, name: name,
     started_at: ($m + "-" + day + "T" + from + ":00:00Z"),
     finished_at: ($m + "-" + day + "T" + to + ":00:00Z")};
  {prices: [price($h1; 2500000), price($hh; 1300000), price($h8; 20000000), price($a1; 1200000)],
   workloads: [run($h8; "owned"; 2; "03"; "08"; "20"; "pretrain-1"),
               run($h1; "opportunistic"; 4; "05"; "10"; "16"; "sweep"),
               run($a1; "owned"; 1; "12"; "09"; "17"; "eval"),
               run($hh; "opportunistic"; 2; "18"; "13"; "15"; "notebook"),
               run($h8; "owned"; 1; "24"; "06"; "18"; "finetune")]}' >"$tmp"
g history import "$tmp" >/dev/null
g invoice issue --org demo-corp --period "$last" >/dev/null
echo "demo history: $last of demo-corp imported (simulated) and invoiced"
