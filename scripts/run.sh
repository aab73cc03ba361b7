#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The first command of the README: install, build, and run gpuaasd on
# http://127.0.0.1:8080 with an embedded SQLite store (./gpuaas.db).
# On a machine where `nvidia-smi -L` works, gpuaasd reads the GPUs through
# nvidia-smi and, on first start, a local cluster of this machine is made with
# a flavor per GPU class and a project 'demo' that may use them all
# (scripts/local-cluster.sh), so work can run at once. On a machine with no
# NVIDIA GPU it says so, and on first start it fills the store with a clearly
# labelled simulated demo world (the README's tour): a fleet (demo-fleet.sh);
# two organizations whose teams own pools, lend them and borrow, users of every
# role with their tokens in gpuaas-demo-users beside the store, and live work in
# which borrowed GPUs are reclaimed by their owner, after a past month imported
# as simulated history and invoiced (demo-world.sh and demo-history.sh, in the
# background so the daemon is usable meanwhile).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/build.sh build >/dev/null

listen=${GPUAAS_LISTEN:-127.0.0.1:8080}
db=${GPUAAS_DB:-gpuaas.db}
token_file=.gpuaas-admin-token
fresh=0
[ -e "$db" ] || fresh=1

has_gpu=0
gpu_flags=()
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  has_gpu=1
  gpu_flags=(--nvidia-smi nvidia-smi) # telemetry, and the local cluster's GPUs
  echo "gpuaas: found $(nvidia-smi -L | grep -c '^GPU') NVIDIA GPU(s); reading them with nvidia-smi" >&2
else
  echo "gpuaas: no NVIDIA GPU found on this machine; starting with a SIMULATED demo fleet" >&2
fi

rm -f "$token_file"
build/src/gpuaasd --listen "$listen" --db "$db" --bootstrap-token-file "$token_file" \
  "${gpu_flags[@]}" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid' INT TERM

for _ in $(seq 100); do
  curl -fsS "http://$listen/healthz" >/dev/null 2>&1 && break
  kill -0 $pid 2>/dev/null || exit 1
  sleep 0.1
done

if [ $fresh -eq 1 ] && [ $has_gpu -eq 0 ] && [ -s "$token_file" ]; then
  export GPUAAS_SERVER="http://$listen" GPUAAS_TOKEN="$(cat "$token_file")"
  bash scripts/demo-fleet.sh build/src/gpuaas >/dev/null
  echo "gpuaas: demo fleet 'demo-sim' created (SIMULATED: no real GPUs behind it)" >&2
  echo "gpuaas: demo world (SIMULATED): robotics (globex) borrows vision's (acme) idle H100s;" \
    "in about 15 s vision reclaims them ('gpuaas preemptions'; the README's tour)" >&2
  users_file="$(dirname "$db")/gpuaas-demo-users"
  bash scripts/demo-world.sh build/src/gpuaas "$users_file" | sed 's/^/gpuaas: /' >&2 &
  unset GPUAAS_SERVER GPUAAS_TOKEN
fi
if [ $fresh -eq 1 ] && [ $has_gpu -eq 1 ] && [ -s "$token_file" ]; then
  if GPUAAS_SERVER="http://$listen" GPUAAS_TOKEN="$(cat "$token_file")" \
    bash scripts/local-cluster.sh build/src/gpuaas >&2; then
    echo "gpuaas: local cluster 'local' of this machine's GPUs created; try:" >&2
    echo "  build/src/gpuaas run --project demo --flavor <class>.1x -- nvidia-smi -L" >&2
  else
    echo "gpuaas: could not set up the local cluster; see above" >&2
  fi
fi
if [ -s "$token_file" ]; then
  echo "gpuaas: the admin token is also in $token_file (mode 0600); delete it once saved" >&2
fi
echo "gpuaas: serving on http://$listen, dashboard at http://$listen/ui/  (Ctrl-C stops)" >&2
wait $pid
