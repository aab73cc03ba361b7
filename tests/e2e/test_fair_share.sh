#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The decayed fair share (fair-share = decayed, issue 17) through the daemon:
# what a project used as opportunistic work is kept, decayed by the
# half-life, exactly as its allocations say, before and after a restart
# (rebuilt from the usage ledger and the open runs); the project that used
# less lately gets idle GPUs first, and the other's waiting work says so,
# naming the project only to those who may see it; gpuaas share shows it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sim_setup.sh"

H=60 # the half-life, s: short, so that the decay shows within the test
flags=(--sim-fleet "$FLEET" --grace-s 1 --fair-share decayed --fair-share-half-life-s "$H")
start_daemon "$TMP/gpuaas.db" "${flags[@]}"
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
"${g[@]}" org create acme >/dev/null
"${g[@]}" org create other >/dev/null
"${g[@]}" project create old --org acme >/dev/null
"${g[@]}" project create new --org other >/dev/null
"${g[@]}" project create fill --org acme >/dev/null
for p in old new fill; do
  "${g[@]}" quota create --project "$p" --gpu-class h100 --limit-milli 16000 >/dev/null
done
"${g[@]}" flavor create h100.1x --gpu-class h100 --gpu-milli 1000 --vcpus 1 --memory-mib 1024 \
  --price-per-hour-micros 2500000 >/dev/null
"${g[@]}" flavor create h100.4x --gpu-class h100 --gpu-milli 4000 --vcpus 4 --memory-mib 4096 \
  --price-per-hour-micros 10000000 >/dev/null
OLD=$("${g[@]}" -o json project show old | jq -r .id)
NEW=$("${g[@]}" -o json project show new | jq -r .id)
FILL=$("${g[@]}" -o json project show fill | jq -r .id)
F1=$("${g[@]}" -o json flavor show h100.1x | jq -r .id)
F4=$("${g[@]}" -o json flavor show h100.4x | jq -r .id)
"${g[@]}" user create carol >/dev/null
"${g[@]}" role-binding create --user carol --role member --project old >/dev/null
CAROL=$("${g[@]}" -o json token create --user carol | jq -r .token)

# expected PROJECT T_MS: the project's decayed opportunistic usage at T as the milli-GPU
# held on average (usage x ln 2 / H), from its allocations: a closed one held milli over
# [s, e) counts milli * (2^(-(T-e)/H) - 2^(-(T-s)/H)), an open one milli * (1 - 2^(-(T-s)/H)).
expected() {
  sqlite3 "$TMP/gpuaas.db" "SELECT milli, started_ms, COALESCE(ended_ms, -1) FROM allocations \
    WHERE project_id = $1 AND priority_class = 'opportunistic';" |
    awk -F'|' -v t="$2" -v h="$H" '
      function p(x) { return exp(-log(2) * x / (h * 1000)) }
      { e = ($3 < 0 || $3 > t) ? t : $3; sum += $1 * (p(t - e) - p(t - $2)) }
      END { printf "%.3f\n", sum }'
}

# check_average PROJECT WHAT: the quota's decayed_average_milli is what the allocations
# say at the time it was read (between two clock readings), within rounding.
check_average() {
  local t0 t1 got lo hi
  t0=$(date +%s%3N)
  api GET "/v1/quotas?project_id=$1" "$ADMIN_TOKEN"
  t1=$(date +%s%3N)
  got=$(jq -r '.items[0].decayed_average_milli' <<<"$BODY")
  lo=$(expected "$1" "$t0")
  hi=$(expected "$1" "$t1")
  awk -v g="$got" -v a="$lo" -v b="$hi" 'BEGIN {
    lo = a < b ? a : b; hi = a < b ? b : a; exit !(g != "null" && g >= lo - 3 && g <= hi + 3) }' ||
    fail "$2: decayed_average_milli $got, the allocations say $lo .. $hi"
  echo "$got"
}

# History: old ran 8 GPUs for 4 s (closed, in the ledger) and runs 1 GPU on (an open run).
o1=$(submit "$OLD" "$F4" opportunistic 4)
o2=$(submit "$OLD" "$F4" opportunistic 4)
long=$(submit "$OLD" "$F1" opportunistic 600)
wait_state "$o1" succeeded 20
wait_state "$o2" succeeded 20
wait_state "$long" running 5
expect_eq "$(sqlite3 "$TMP/gpuaas.db" "SELECT count(*) FROM usage_records \
  WHERE project_id = $OLD AND priority_class = 'opportunistic';")" 2 "old's closed runs in the ledger"
before=$(check_average "$OLD" "old, before the restart")
[ "$before" -gt 100 ] || fail "old's decayed average $before: its 8 GPU x 4 s should show"
api GET "/v1/quotas?project_id=$NEW" "$ADMIN_TOKEN"
expect_eq "$(jq -c '.items[0] | [.decayed_usage_milli_hours, .decayed_average_milli]' <<<"$BODY")" \
  "[0,0]" "new used nothing"

# A restart: the core is rebuilt, and the usage from the ledger and the open run.
kill_daemon
start_daemon "$TMP/gpuaas.db" "${flags[@]}"
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN") # a new port
wait_state "$long" running 10
check_average "$OLD" "old, after the restart" >/dev/null
# A change of the fleet rebuilds the core from the store: the usage goes from the old core
# to the new one.
"${g[@]}" pool create spare --owner-project fill --cluster sim --node-selector rack=none \
  --cost-per-gpu-hour-micros 1 >/dev/null
sleep 1
check_average "$OLD" "old, after a rebuild" >/dev/null
api GET "/v1/quotas?project_id=$OLD" "$ADMIN_TOKEN"
hours=$(jq -r '.items[0].decayed_usage_milli_hours' <<<"$BODY")
[ "$hours" -gt 0 ] || fail "old's decayed usage in milli-GPU hours: $hours"

# Idle GPUs: fill takes 11 of the 15 free, then 4 more for 3 s. When those free, new's and
# old's 4-GPU jobs (waiting for that end) enter the same pass: new, which used nothing,
# goes first, and old's job says why it waits.
for i in 1 2; do submit "$FILL" "$F4" opportunistic 600 >/dev/null; done
for i in 1 2 3; do submit "$FILL" "$F1" opportunistic 600 >/dev/null; done
x=$(submit "$FILL" "$F4" opportunistic 3)
wait_state "$x" running 10
n1=$(submit "$NEW" "$F4" opportunistic 600 ",\"after_id\":$x")
o3=$(submit "$OLD" "$F4" opportunistic 600 ",\"after_id\":$x")
wait_state "$n1" running 20
expect_eq "$(state_of "$o3")" queued "old's job waits"
api GET "/v1/workloads/$o3" "$ADMIN_TOKEN"
expect_contains "$(jq -r .reason <<<"$BODY")" \
  "behind project new, which used less over the last 1 minute" "the reason, for the admin"
api GET "/v1/workloads/$o3" "$CAROL"
reason=$(jq -r .reason <<<"$BODY")
expect_contains "$reason" "behind a project of another tenant, which used less over the last 1 minute" \
  "the reason, for a member of old"
case "$reason" in *"project new"*) fail "a member of old is told of project new: $reason" ;; esac

# gpuaas share: the decayed column, and the order for the next idle GPUs by the key: old
# (1 GPU borrowed now + its average of lately) before new (4 now, nothing before), fill last
# (11 now). Old's share is that sum over the class's 16 GPUs.
table=$("${g[@]}" share)
expect_contains "$table" "DECAYED GPU-H" "gpuaas share's decayed column"
share=$("${g[@]}" -o json share)
order=$(jq -r '[.items[] | {next, project_id}] | sort_by(.next) | map(.project_id | tostring) | join(" ")' \
  <<<"$share")
expect_eq "$order" "$OLD $NEW $FILL" "share: who is next"
jq -e --argjson p "$OLD" '.items[] | select(.project_id == $p) |
  .decayed_usage_milli_hours > 0 and
  ((.share - (.borrowed_milli + .decayed_average_milli) / 16000) | fabs) < 1e-9' <<<"$share" \
  >/dev/null || fail "share: old's figures $(jq -c . <<<"$share")"

# The current rule (the default) shows none of it.
stop_daemon
start_daemon "$TMP/gpuaas.db" --sim-fleet "$FLEET" --grace-s 1
api GET "/v1/quotas?project_id=$OLD" "$ADMIN_TOKEN"
expect_eq "$(jq -r '.items[0] | has("decayed_usage_milli_hours")' <<<"$BODY")" false \
  "no decayed usage with the current rule"
case "$("${GPUAAS}" --server "$URL" --token "$ADMIN_TOKEN" share)" in
*DECAYED*) fail "gpuaas share shows the decayed column with the current rule" ;;
esac
echo "ok"
