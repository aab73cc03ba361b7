#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fills a fresh gpuaas with a simulated demo fleet through the real CLI: a
# cluster labelled simulated=true, GPU classes, four nodes of eight GPUs in
# two racks (each node also labelled host=NAME, so a pool can be one node),
# and a catalog of flavors with prices. The tenants and their work are
# scripts/demo-world.sh's (the tests that want a bare fleet use this alone).
# Usage: GPUAAS_SERVER=... GPUAAS_TOKEN=... demo-fleet.sh path/to/gpuaas
set -euo pipefail
cli=${1:-gpuaas}
g() { "$cli" "$@"; }

g cluster create demo-sim --backend sim --labels simulated=true,site=demo \
  --description "SIMULATED demo fleet: no real GPUs behind it"
g gpu-class create h100-80gb --model "NVIDIA H100 80GB HBM3" --vendor nvidia --memory-mib 81559
g gpu-class create a100-40gb --model "NVIDIA A100-SXM4-40GB" --vendor nvidia --memory-mib 40960
for n in 0 1 2 3; do
  cls=h100-80gb; [ $n -ge 2 ] && cls=a100-40gb
  g node create "sim-node-$n" --cluster demo-sim --cpu-milli 128000 --memory-mib 1048576 \
    --labels "simulated=true,rack=r$((n / 2)),host=sim-node-$n"
  for i in 0 1 2 3 4 5 6 7; do
    g gpu create --node "sim-node-$n" --index $i --gpu-class $cls --uuid "GPU-5130${n}${i}00-0000-4000-8000-00000000000${n}" >/dev/null
  done
done
g flavor create h100.1x --gpu-class h100-80gb --gpu-milli 1000 --vcpus 16 --memory-mib 131072 \
  --price-per-hour-micros 2500000
g flavor create h100.half --gpu-class h100-80gb --gpu-milli 500 --vcpus 8 --memory-mib 65536 \
  --price-per-hour-micros 1300000
g flavor create h100.8x --gpu-class h100-80gb --gpu-milli 8000 --vcpus 112 --memory-mib 917504 \
  --price-per-hour-micros 20000000
g flavor create a100.1x --gpu-class a100-40gb --gpu-milli 1000 --vcpus 8 --memory-mib 65536 \
  --price-per-hour-micros 1200000
# The price list the meter rates with (USD per replica-hour; P2 at 0.6), in force from now.
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
for fp in h100.1x:2500000 h100.half:1300000 h100.8x:20000000 a100.1x:1200000; do
  g price create --flavor "${fp%%:*}" --price-per-hour-micros "${fp#*:}" --effective-from "$now" \
    >/dev/null
done
