#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Slurm users' habits, through the CLI, on the local backend (work really runs):
# `gpuaas run --script FILE` takes its flags from the script's #GPUAAS lines (as
# sbatch takes #SBATCH lines), the command line's flags win, words after '--'
# are the script's arguments, bash scripts run under bash, and `--gpus N` picks
# the cheapest flavor with N GPUs. Bad scripts are refused with a clear error
# and nothing is submitted.
. "$(dirname "$0")/lib.sh"

start_daemon "$TMP/gpuaas.db" --log-dir "$TMP/logs" --grace-s 1
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
"${g[@]}" cluster create here --backend local >/dev/null
"${g[@]}" gpu-class create h100 >/dev/null
"${g[@]}" node create this-host --cluster here >/dev/null
"${g[@]}" gpu create --node this-host --index 0 --gpu-class h100 --uuid GPU-aaaa >/dev/null
"${g[@]}" gpu create --node this-host --index 1 --gpu-class h100 --uuid GPU-bbbb >/dev/null
"${g[@]}" flavor create h100.1x --gpu-class h100 --gpu-milli 1000 --price-per-hour 2.50 >/dev/null
"${g[@]}" flavor create h100.2x --gpu-class h100 --gpu-milli 2000 --price-per-hour 5.00 >/dev/null
"${g[@]}" flavor create h100.2x-cheap --gpu-class h100 --gpu-milli 2000 --price-per-hour 4.00 >/dev/null
"${g[@]}" org create acme >/dev/null
"${g[@]}" project create ml --org acme >/dev/null
"${g[@]}" quota create --project ml --gpu-class h100 --limit-milli 2000 >/dev/null

# A script as sbatch users write it: directives in its head, one after the first command.
cat >"$TMP/train.sbatch" <<'SCRIPT'
#!/bin/sh
# train a model
#GPUAAS --flavor h100.1x --project ml
#GPUAAS --name "from the script" --opportunistic   # a trailing comment
#GPUAAS --max-runtime 1h

echo "args: $# [$1] [$2]"
echo "devices=$CUDA_VISIBLE_DEVICES"
#GPUAAS --replicas 2
SCRIPT
w=$("${g[@]}" -o json run --script "$TMP/train.sbatch" --auto -- --epochs "3 4")
id=$(jq -r .id <<<"$w")
expect_eq "$(jq -r '[.name, .priority_class, .max_runtime_s, .replicas] | join(",")' <<<"$w")" \
  "from the script,auto,3600,1" "directives, the command line's --auto winning, none after the first command"
wait_state "$id" succeeded 15
logs=$("${g[@]}" logs "$id")
expect_contains "$logs" "args: 2 [--epochs] [3 4]" "the words after -- are the script's arguments"
expect_contains "$logs" "devices=GPU-" "the script ran on its GPU"

# A bash script runs under bash.
cat >"$TMP/b.sh" <<'SCRIPT'
#!/usr/bin/env bash
#GPUAAS --flavor h100.1x --project ml
arr=(a b c); echo "bash ${#arr[@]} $1"
SCRIPT
id=$("${g[@]}" -o json run --script "$TMP/b.sh" -- x | jq -r .id)
wait_state "$id" succeeded 15
expect_eq "$("${g[@]}" logs "$id")" "bash 3 x" "the bash script's output"

# --gpus N: the cheapest active flavor with N GPUs per replica, said on stderr.
out=$("${g[@]}" -o json run --project ml --gpus 2 -- true 2>"$TMP/err")
expect_eq "$(jq -r .flavor_id <<<"$out")" "$("${g[@]}" -o json flavor show h100.2x-cheap | jq -r .id)" "--gpus 2"
expect_contains "$(cat "$TMP/err")" "using flavor h100.2x-cheap (the cheapest with 2 GPUs per replica)" "--gpus says which"
rc=0
"${g[@]}" run --project ml --gpus 3 -- true >/dev/null 2>"$TMP/err" || rc=$?
expect_eq "$rc" 1 "--gpus 3: no such flavor"
expect_contains "$(cat "$TMP/err")" "GPUs per replica of the flavors offered: 1, 2" "the counts offered"

# Arrays (as sbatch --array): one workload per task, at most 2 at once (%2: task k after k-2).
arr=$("${g[@]}" -o json run --project ml --flavor h100.1x --array 0-3%2 --name sweep \
  -- sh -c 'echo "task=$GPUAAS_ARRAY_TASK_ID job=$GPUAAS_ARRAY_JOB_ID"')
expect_eq "$(jq -r '[.items[].name] | join(",")' <<<"$arr")" "sweep[0],sweep[1],sweep[2],sweep[3]" "task names"
expect_eq "$(jq -r '[.items[].after_id] | map(tostring) | join(",")' <<<"$arr")" \
  "null,null,$(jq -r '.items[0].id' <<<"$arr"),$(jq -r '.items[1].id' <<<"$arr")" "%2: task k after task k-2"
for id in $(jq -r '.items[].id' <<<"$arr"); do wait_state "$id" succeeded 20; done
expect_eq "$("${g[@]}" logs "$(jq -r '.items[2].id' <<<"$arr")")" \
  "task=2 job=$(jq -r '.items[0].id' <<<"$arr")" "the task sees its index and the array's id"
rc=0
"${g[@]}" run --project ml --flavor h100.1x --array 5-3 -- true >/dev/null 2>"$TMP/err" || rc=$?
expect_eq "$rc" 2 "a bad --array is a usage error"
expect_contains "$(cat "$TMP/err")" "give task indices as 0-99" "why"

# acct (as sacct): the finished work, newest first, with what each run used.
wait_state "$(jq -r .id <<<"$out")" succeeded 15
acct=$("${g[@]}" -o json acct --project ml)
expect_eq "$(jq '.items | length' <<<"$acct")" 7 "seven finished workloads"
expect_eq "$(jq -r '[.items[].id] == ([.items[].id] | sort | reverse)' <<<"$acct")" true "newest first"
expect_eq "$(jq -r '[.items[] | .gpu_hours > 0 and .list_cost_micros >= 0 and .ran_as == "P2"] | all' <<<"$acct")" \
  true "GPU-hours, list cost and the class of every run"
expect_contains "$("${g[@]}" acct)" "GPU-HOURS" "the table"
expect_eq "$("${g[@]}" acct --since 2099-01-01)" "no finished work since then" "--since"
rc=0
"${g[@]}" acct --since yesterday >/dev/null 2>"$TMP/err" || rc=$?
expect_eq "$rc" 2 "a bad --since is a usage error"

# Refused with a clear error, nothing submitted.
before=$("${g[@]}" -o json ps --all | jq '.items | length')
printf '#GPUAAS --flavor h100.1x --name "unclosed\necho hi\n' >"$TMP/bad1.sh"
printf '#!/usr/bin/env python3\n#GPUAAS --flavor h100.1x\nprint(1)\n' >"$TMP/bad2.py"
printf '#GPUAAS --flavor h100.1x -- echo\necho hi\n' >"$TMP/bad3.sh"
for bad in "bad1.sh:a quote is not closed" "bad2.py:is for python3" "bad3.sh:'--' cannot be a #GPUAAS directive" \
  "missing.sh:No such file"; do
  rc=0
  "${g[@]}" run --project ml --script "$TMP/${bad%%:*}" >/dev/null 2>"$TMP/err" || rc=$?
  expect_eq "$rc" 2 "${bad%%:*} is a usage error"
  expect_contains "$(cat "$TMP/err")" "${bad#*:}" "${bad%%:*}'s error"
done
expect_eq "$("${g[@]}" -o json ps --all | jq '.items | length')" "$before" "nothing was submitted"
check_daemon_alive
echo "PASS"
