#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Peoples the simulated demo fleet (demo-fleet.sh) through the real CLI, so
# that the first minutes show what gpuaas is for: two organizations, acme
# (teams vision and nlp) and globex (team robotics), each team owning a pool
# and lending it to the others; quotas; one user of each role, whose tokens
# go to USERS_FILE (mode 0600; lines "user role scope token") so the tour can
# log in as them; last month's work and invoices (demo-history.sh). Then live contention: nlp and robotics run work of their
# own (some of it short, so finished work has usage), vision borrows an A100,
# robotics fills vision's idle H100 node with opportunistic sweeps, and vision
# then submits owned work that needs its node: the scheduler reclaims the
# borrowed GPUs within the sweeps' 10 s grace (GPUAAS_DEMO_RECLAIM_AFTER_S
# seconds after they started, default 15). Everything is simulated.
# Usage: GPUAAS_SERVER=... GPUAAS_TOKEN=... demo-world.sh path/to/gpuaas USERS_FILE
set -euo pipefail
cli=${1:-gpuaas}
users_file=${2:?usage: demo-world.sh path/to/gpuaas USERS_FILE}
g() { "$cli" "$@"; }
q() { "$cli" "$@" >/dev/null; }

q org create acme --display-name "Acme Research (simulated demo)" --cost-center CC-100
q org create globex --display-name "Globex Robotics (simulated demo)" --cost-center GX-7
q project create vision --org acme --description "computer vision (simulated demo)"
q project create nlp --org acme --description "language models (simulated demo)"
q project create robotics --org globex --description "robot learning (simulated demo)"

# Each team owns a pool and lends it: vision's H100 node to nlp and robotics, nlp's
# H100 node to vision, robotics' A100 rack to all of acme. What the owner does not use
# is lent; the owner's owned work takes it back (a reclaim), after the borrower's grace.
q pool create vision-h100 --owner-project acme/vision --cluster demo-sim \
  --node-selector host=sim-node-0 --access-project-ids acme/nlp,globex/robotics \
  --cost-per-gpu-hour-micros 1800000
q pool create nlp-h100 --owner-project acme/nlp --cluster demo-sim \
  --node-selector host=sim-node-1 --access-project-ids acme/vision \
  --cost-per-gpu-hour-micros 1800000
q pool create robotics-a100 --owner-project globex/robotics --cluster demo-sim \
  --node-selector rack=r1 --access-org-ids acme --cost-per-gpu-hour-micros 900000
# Limits include what a team may borrow; guarantees follow the pools each team owns.
for pcl in acme/vision:h100-80gb:16000 acme/vision:a100-40gb:8000 \
  acme/nlp:h100-80gb:16000 acme/nlp:a100-40gb:8000 \
  globex/robotics:h100-80gb:8000 globex/robotics:a100-40gb:16000; do
  IFS=: read -r p c l <<<"$pcl"
  q quota create --project "$p" --gpu-class "$c" --limit-milli "$l"
done

# People: maria manages acme (org-admin), gus globex; nina is nlp's project admin;
# victor works in vision, rita in robotics; otto may only look at robotics.
umask 077
: >"$users_file"
chmod 600 "$users_file"
echo "# gpuaas demo users (simulated demo; tokens are secrets): user role scope token" \
  >>"$users_file"
person() { # user "display name" role --org|--project scope
  q user create "$1" --display-name "$2" --email "$1@example.com"
  q role-binding create --user "$1" --role "$3" "$4" "$5"
  echo "$1 $3 $5 $(g -o json token create --user "$1" --name demo | jq -r .token)" \
    >>"$users_file"
}
person maria "Maria Rossi" org-admin --org acme
person gus "Gus Meyer" org-admin --org globex
person nina "Nina Patel" project-admin --project acme/nlp
person victor "Victor Chen" member --project acme/vision
person rita "Rita Okafor" member --project globex/robotics
person otto "Otto Berg" viewer --project globex/robotics
q org update acme --manager maria
q org update globex --manager gus
as() { # user command...: the CLI with that user's token
  local u=$1
  shift
  GPUAAS_TOKEN=$(awk -v u="$u" '$1 == u { print $4 }' "$users_file") "$cli" "$@"
}

# Last month first (demo-history.sh): imported while no run is ending, as the import asks.
bash "$(dirname "$0")/demo-history.sh" "$cli"

# Work. The fleet is simulated: --duration says how long each job "runs".
as nina -o json run --project acme/nlp --flavor h100.1x --replicas 4 --owned --duration 3h \
  --name llm-pretrain -- python pretrain.py --model 7b >/dev/null
for i in 1 2; do
  as nina -o json run --project acme/nlp --flavor h100.1x --owned --duration 20s \
    --name "tokenize-$i" -- python tokenize.py --shard "$i" >/dev/null
done
as rita -o json run --flavor a100.1x --replicas 4 --owned --duration 6h --name policy-train \
  -- python train_policy.py >/dev/null
as rita -o json run --flavor a100.1x --owned --duration 15s --name sim-eval \
  -- python eval.py >/dev/null
as victor -o json run --flavor a100.1x --duration 25s --name quick-eval \
  -- python eval.py --split val >/dev/null

# Robotics borrows vision's idle H100s: four sweeps of two GPUs, long, with a
# short grace so that a reclaim takes seconds. No class is given: robotics owns
# no H100, so the automatic class makes them opportunistic. Preempted sweeps go
# back to robotics' queue, except the last, which ends (--no-requeue).
for i in 1 2 3 4; do
  more=()
  [ $i -eq 4 ] && more=(--no-requeue)
  as rita run --project globex/robotics --flavor h100.1x --replicas 2 \
    --duration 4h --grace 10s "${more[@]}" --name "sweep-$i" \
    -- python sweep.py --trial "$i" >/dev/null
done
for _ in $(seq 100); do
  running=$(as rita -o json ps --state running |
    jq '[.items[] | select(.name | startswith("sweep-"))] | length')
  [ "$running" -eq 4 ] && break
  sleep 0.1
done
[ "$running" -eq 4 ] || echo "demo-world: only $running of robotics' sweeps started" >&2

# Let the borrowed GPUs be seen busy for a while (GPUAAS_DEMO_RECLAIM_AFTER_S, default
# 15 s), then vision wants its node back: work of all eight GPUs, with no class given,
# which the automatic class makes owned (P1): vision's guarantee is that node. The
# scheduler preempts the borrowed sweeps (they go back to robotics' queue) and starts it.
sleep "${GPUAAS_DEMO_RECLAIM_AFTER_S:-15}"
as victor -o json run --flavor h100.8x --duration 2h --name detector-train \
  -- python train_detector.py --epochs 90 >/dev/null
echo "demo world: acme (vision, nlp) and globex (robotics); robotics borrows vision's H100s," \
  "vision reclaims them (simulated); users and tokens in $users_file"
