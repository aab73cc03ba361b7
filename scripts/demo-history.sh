#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Gives the simulated demo world (demo-fleet.sh, demo-world.sh) a past: last
# month's finished work of acme's teams (vision, nlp) and globex's (robotics),
# borrowing included, imported through the API (gpuaas history import:
# labelled simulated, placed on the demo GPUs that were free then, metered into
# the usage ledger) at the demo prices, and that month's invoice of each
# organization issued. Nothing is written behind the daemon.
# demo-world.sh calls it once the tenants exist and before any work runs.
# Usage: GPUAAS_SERVER=... GPUAAS_TOKEN=... demo-history.sh path/to/gpuaas
set -euo pipefail
cli=${1:-gpuaas}
g() { "$cli" "$@"; }
id_of() { g -o json "$1" show "$2" | jq -r .id; }

last=$(date -u -d "$(date -u +%Y-%m-01) -1 month" +%Y-%m)
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# The demo list prices, in force since the start of last month (USD per replica-hour).
# acme: 2 x 12 h x 20 + 4 x 6 h x 2.5 x 0.6 + 8 h x 1.2 x 0.6 + 2 x 2 h x 1.3 + 12 h x 20
# = 766.96; globex: 4 x 12 h x 1.2 + 2 x 4 h x 2.5 x 0.6 = 69.60 (P2 at 0.6).
jq -n --arg m "$last" --argjson vision "$(id_of project acme/vision)" \
  --argjson nlp "$(id_of project acme/nlp)" --argjson robotics "$(id_of project globex/robotics)" \
  --argjson h1 "$(id_of flavor h100.1x)" --argjson h8 "$(id_of flavor h100.8x)" \
  --argjson hh "$(id_of flavor h100.half)" --argjson a1 "$(id_of flavor a100.1x)" '
  def price(f; micros): {flavor_id: f, currency: "USD", price_per_hour_micros: micros,
                         effective_from: ($m + "-01T00:00:00Z")};
  def run(p; f; cls; n; day; from; to; name):
    {project_id: p, flavor_id: f, priority_class: cls, replicas: n, name: name,
     started_at: ($m + "-" + day + "T" + from + ":00:00Z"),
     finished_at: ($m + "-" + day + "T" + to + ":00:00Z")};
  {prices: [price($h1; 2500000), price($hh; 1300000), price($h8; 20000000), price($a1; 1200000)],
   workloads: [run($vision; $h8; "owned"; 2; "03"; "08"; "20"; "pretrain-1"),
               run($nlp; $h1; "opportunistic"; 4; "05"; "10"; "16"; "sweep"),
               run($robotics; $a1; "owned"; 4; "08"; "08"; "20"; "policy-train"),
               run($vision; $a1; "opportunistic"; 1; "12"; "09"; "17"; "eval"),
               run($robotics; $h1; "opportunistic"; 2; "15"; "10"; "14"; "sweep"),
               run($nlp; $hh; "owned"; 2; "18"; "13"; "15"; "notebook"),
               run($nlp; $h8; "owned"; 1; "24"; "06"; "18"; "finetune")]}' >"$tmp"
g history import "$tmp" >/dev/null
g invoice issue --org acme --period "$last" >/dev/null
g invoice issue --org globex --period "$last" >/dev/null
echo "demo history: $last of acme and globex imported (simulated) and invoiced"
