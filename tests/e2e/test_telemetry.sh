#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# GPU telemetry in the daemon, with a stand-in nvidia-smi whose output the
# test writes: an allocated GPU at 95 % is busy, one at 0 % turns
# idle-allocated once the idle window is covered, a GPU that stops being
# reported turns down (and stays listed), a failing source is marked stale
# and its data kept, and the history of a GPU comes back.
. "$(dirname "$0")/lib.sh"

mkdir -p "$TMP/bin"
cat >"$TMP/bin/nvidia-smi" <<SH
#!/bin/sh
[ -e "$TMP/smi.fail" ] && exit 1
cat "$TMP/smi.csv"
SH
chmod +x "$TMP/bin/nvidia-smi"
: >"$TMP/smi.csv"

start_daemon "$TMP/gpuaas.db" --nvidia-smi "$TMP/bin/nvidia-smi" --collect-interval-s 1 \
  --idle-window-s 2 --idle-notify-s 1 --idle-stop-p2-s 3 --grace-s 1
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
GPUAAS_SERVER=$URL GPUAAS_TOKEN=$ADMIN_TOKEN bash "$GPUAAS_SOURCE_DIR/scripts/demo-fleet.sh" \
  "$GPUAAS" >/dev/null || fail "demo-fleet.sh failed"
"${g[@]}" org create acme >/dev/null
"${g[@]}" project create vision --org acme >/dev/null
"${g[@]}" pool create vision-h100 --owner-project vision --cluster demo-sim --node-selector rack=r0 \
  >/dev/null
"${g[@]}" quota create --project vision --gpu-class h100-80gb --limit-milli 16000 >/dev/null
idle_w=$("${g[@]}" -o json run --project vision --flavor h100.1x --owned --duration 1h -- notebook | jq -r .id)
busy_w=$("${g[@]}" -o json run --project vision --flavor h100.1x --duration 1h -- train | jq -r .id)
idle_p2=$("${g[@]}" -o json run --project vision --flavor h100.1x --opportunistic --duration 1h -- forgotten | jq -r .id)
deadline=$((SECONDS + 10))
until [ "$("${g[@]}" -o json inventory --state allocated | jq '.items | length')" = 3 ]; do
  [ $SECONDS -lt $deadline ] || fail "three GPUs not allocated"
  sleep 0.2
done
gpu_of() { "${g[@]}" -o json inventory | jq -r --arg w "$1" '.items[] | select(.used_by.workload_id == ($w | tonumber)) | .uuid'; }
alloc=("$(gpu_of "$busy_w")" "$(gpu_of "$idle_w")" "$(gpu_of "$idle_p2")")
free=$("${g[@]}" -o json inventory --state free | jq -r '.items[0].uuid')
gone=$("${g[@]}" -o json inventory --state free | jq -r '.items[1].uuid')
smi() { # rows: uuid util
  local i=0
  : >"$TMP/smi.new"
  while [ $# -gt 0 ]; do
    echo "$i, $1, NVIDIA H100 80GB HBM3, 00000000:0$i:00.0, 81559, 1024, $2, 40, 120.5, [N/A]" >>"$TMP/smi.new"
    i=$((i + 1)); shift 2
  done
  mv "$TMP/smi.new" "$TMP/smi.csv"
}
smi "${alloc[0]}" 95 "${alloc[1]}" 0 "${alloc[2]}" 0 "$free" 0 "$gone" 0

state() { "${g[@]}" -o json inventory | jq -r --arg u "$1" '.items[] | select(.uuid == $u) | .state'; }
wait_gpu() { # uuid state seconds
  local deadline=$((SECONDS + $3))
  until [ "$(state "$1")" = "$2" ]; do
    [ $SECONDS -lt $deadline ] || fail "GPU $1 not $2 in time (is $(state "$1"))"
    sleep 0.2
  done
}
wait_gpu "${alloc[0]}" busy 10
wait_gpu "${alloc[1]}" idle-allocated 10
[ "$(state "$free")" = free ] || fail "an unallocated GPU at 0 % should be free"
[ "$(state "${alloc[0]}")" = busy ] || fail "the busy GPU changed state"
row=$("${g[@]}" -o json inventory | jq -c --arg u "${alloc[0]}" '.items[] | select(.uuid == $u)')
expect_eq "$(jq -r '.telemetry.activity' <<<"$row")" 0.95 "activity from nvidia-smi"

# Idle policies: an "idle" event for both idle runs; the opportunistic one is stopped, the
# owned one never.
wait_state "$idle_p2" cancelled 20
"${g[@]}" -o json events --workload "$idle_p2" -n 0 >"$TMP/ev.json"
expect_eq "$(jq '[.items[] | select(.type == "idle")] | length' "$TMP/ev.json")" 1 "one idle event"
expect_contains "$(jq -r '.items[] | select(.type == "cancelling") | .message' "$TMP/ev.json")" \
  "opportunistic work idle" "why it was stopped"
deadline=$((SECONDS + 10))
until "${g[@]}" -o json events --workload "$idle_w" -n 0 | jq -e '.items[] | select(.type == "idle")' >/dev/null; do
  [ $SECONDS -lt $deadline ] || fail "no idle event for the owned idle run"
  sleep 0.2
done
expect_eq "$(state_of "$idle_w")" running "owned work is never stopped for being idle"
expect_eq "$(state_of "$busy_w")" running "busy work runs on"

# A GPU no longer reported turns down after three missed scrapes, and stays listed.
smi "${alloc[0]}" 95 "${alloc[1]}" 0 "${alloc[2]}" 0 "$free" 0
wait_gpu "$gone" down 10
expect_eq "$("${g[@]}" -o json inventory | jq '.items | length')" 32 "no GPU disappears"
# /metrics counts GPUs in the states the inventory shows them in (one rule: busy, idle-allocated
# and the unreported GPU's down, not "allocated" and "free" beside them; on a draining node the
# unreported GPU stays down in both, the others free of work are draining).
# A GPU may change state between the two reads (an idle window filling up), so they are read
# again until they agree, within a deadline.
same_states() { # what
  local inv_states metric_states deadline=$((SECONDS + 10))
  while :; do
    inv_states=$("${g[@]}" -o json inventory | jq -c '.states | to_entries | sort_by(.key) | from_entries')
    api GET /metrics "$ADMIN_TOKEN"
    metric_states=$(grep '^gpuaas_gpus{' <<<"$BODY" |
      sed -E 's/^gpuaas_gpus\{state="([^"]*)".* ([0-9]+)$/\1 \2/' |
      jq -Rnc '[inputs | split(" ") | {key: .[0], value: (.[1] | tonumber)}] | group_by(.key) |
        map({key: .[0].key, value: (map(.value) | add)}) | from_entries')
    [ "$metric_states" = "$inv_states" ] || [ $SECONDS -ge $deadline ] || { sleep 0.2; continue; }
    break
  done
  expect_eq "$metric_states" "$inv_states" "GPUs by state on /metrics and in the inventory, $1"
  expect_contains "$inv_states" '"down":1' "the unreported GPU is down in both, $1"
}
same_states "node ready"
gone_node=$("${g[@]}" -o json inventory | jq -r --arg u "$gone" '.items[] | select(.uuid == $u) | .node')
"${g[@]}" node update "$gone_node" --state drain >/dev/null
expect_eq "$(state "$gone")" down "the unreported GPU on a draining node"
same_states "node draining"
"${g[@]}" node update "$gone_node" --state ready >/dev/null

# The history of the busy GPU.
# The last minute comes from raw samples, one a second; the last hour from per-minute roll-ups.
api GET "/v1/inventory/history?gpu=${alloc[0]}&from=$(date -u -d '-60 sec' +%FT%TZ)" "$ADMIN_TOKEN"
expect_eq "$HTTP_STATUS" 200 "history"
expect_eq "$(jq -r .resolution <<<"$BODY")" raw "resolution of the last minute"
[ "$(jq '.points | length' <<<"$BODY")" -ge 3 ] || fail "history has too few points: $BODY"
expect_eq "$(jq -r '.points[-1].activity_avg' <<<"$BODY")" 0.95 "history activity"
api GET "/v1/inventory/history?gpu=${alloc[0]}" "$ADMIN_TOKEN"
expect_eq "$(jq -r .resolution <<<"$BODY")" minute "resolution of the last hour"
api GET "/v1/inventory/history?gpu=${alloc[0]}&from=yesterday" "$ADMIN_TOKEN"
expect_eq "$HTTP_STATUS" 400 "a malformed from"
# Efficiency = busy / allocated time: the busy run near 1, the idle owned run 0.
api GET "/v1/inventory/history?workload=$busy_w" "$ADMIN_TOKEN"
expect_eq "$HTTP_STATUS" 200 "history of a workload"
[ "$(jq '.allocated_ms' <<<"$BODY")" -gt 0 ] || fail "no allocated time seen: $BODY"
jq -e '.efficiency > 0.9' <<<"$BODY" >/dev/null || fail "busy work's efficiency: $BODY"
expect_contains "$("${g[@]}" inventory history --workload "$busy_w")" "(busy / allocated)" \
  "the CLI's history"
api GET "/v1/inventory/history?workload=$idle_w" "$ADMIN_TOKEN"
jq -e '.efficiency == 0' <<<"$BODY" >/dev/null || fail "idle work's efficiency: $BODY"
api GET "/v1/inventory/history?node=sim-node-0&from=$(date -u -d '-60 sec' +%FT%TZ)" "$ADMIN_TOKEN"
expect_eq "$HTTP_STATUS" 200 "history of a node"
[ "$(jq .gpus <<<"$BODY")" -ge 1 ] || fail "node history names no GPUs: $BODY"
api GET "/v1/inventory/history?node=sim-node-0&gpu=${alloc[0]}" "$ADMIN_TOKEN"
expect_eq "$HTTP_STATUS" 400 "two selectors at once"
api GET "/v1/inventory/history?gpu=GPU-00000000-0000-0000-0000-00000000dead" "$ADMIN_TOKEN"
expect_eq "$HTTP_STATUS" 404 "history of a GPU not in the inventory"

# The source fails: stale, with its error; what it reported is kept.
touch "$TMP/smi.fail"
deadline=$((SECONDS + 10))
until [ "$("${g[@]}" -o json inventory | jq -r '.sources[0].stale')" = true ]; do
  [ $SECONDS -lt $deadline ] || fail "the failing source is not marked stale"
  sleep 0.2
done
src=$("${g[@]}" -o json inventory | jq -c '.sources[0]')
expect_contains "$(jq -r .error <<<"$src")" "exit" "the source's error"
[ "$(state "${alloc[0]}")" != free ] || fail "a failing source wiped what it knew"
row=$("${g[@]}" -o json inventory | jq -c --arg u "${alloc[0]}" '.items[] | select(.uuid == $u)')
[ "$(jq -r '.telemetry.last_seen_ms' <<<"$row")" -gt 0 ] || fail "last seen lost"
stop_daemon
echo "telemetry: ok"
