#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A local cluster on a machine without a GPU: the declared list (local-gpus)
# gives it a node named after this host and its GPUs (made once, also after
# a restart); work runs on them. A malformed list stops gpuaasd at start with
# a message that names the setting and the entry. Hand-made nodes and GPUs of
# a local cluster are left alone.
. "$(dirname "$0")/lib.sh"

# Bad syntax: refused at start, exit status 2, one clear line.
for bad in "h100" "h100:0" "H100:2" "0:h100,0:l4" "0:h100:not-a-uuid"; do
  rc=0
  "$GPUAASD" --listen 127.0.0.1:0 --db "$TMP/bad.db" --local-gpus "$bad" >/dev/null \
    2>"$TMP/bad.err" || rc=$?
  expect_eq "$rc" 2 "exit status for local-gpus '$bad'"
  expect_contains "$(cat "$TMP/bad.err")" "local-gpus: entry " "the message for '$bad'"
done
expect_contains "$(cat "$TMP/bad.err")" "a UUID is 'GPU-'" "why the last one was refused"
[ ! -e "$TMP/bad.db" ] || fail "a refused start created the store"

start_daemon "$TMP/gpuaas.db" --local-gpus "h100-80gb:2, 2:l4:GPU-dec1a7ed-0000-4000-8000-000000000002" \
  --log-dir "$TMP/logs"
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
"${g[@]}" cluster create here --backend local >/dev/null
# A hand-made node with a hand-made GPU in the same cluster stays as made.
"${g[@]}" gpu-class create h100 >/dev/null
"${g[@]}" node create this-host --cluster here >/dev/null
"${g[@]}" gpu create --node this-host --index 0 --gpu-class h100 --uuid GPU-aaaa >/dev/null

host=$(hostname)
want='[{"node":"'$host'","index":0,"uuid":null,"class":"h100-80gb","health":"ok"},{"node":"'$host'","index":1,"uuid":null,"class":"h100-80gb","health":"ok"},{"node":"'$host'","index":2,"uuid":"GPU-dec1a7ed-0000-4000-8000-000000000002","class":"l4","health":"ok"},{"node":"this-host","index":0,"uuid":"GPU-aaaa","class":"h100","health":"ok"}]'
want=$(jq -c 'sort_by(.node, .index)' <<<"$want")
gpus() {
  local classes nodes
  classes=$("${g[@]}" -o json gpu-class list | jq -c '[.items[] | {key: (.id | tostring), value: .name}] | from_entries')
  nodes=$("${g[@]}" -o json node list | jq -c '[.items[] | {key: (.id | tostring), value: .name}] | from_entries')
  "${g[@]}" -o json gpu list | jq -c --argjson c "$classes" --argjson n "$nodes" \
    '[.items[] | {node: $n[.node_id | tostring], index, uuid, class: $c[.gpu_class_id | tostring], health}] | sort_by(.node, .index)'
}
deadline=$((SECONDS + 15))
until [ "$(gpus)" = "$want" ]; do
  [ $SECONDS -lt $deadline ] || fail "declared GPUs: expected $want, got $(gpus)"
  sleep 0.2
done
expect_eq "$("${g[@]}" -o json node list | jq -r --arg h "$host" '.items[] | select(.name == $h) | .state')" \
  ready "the host's node is ready"

# Work runs on them; a GPU without a UUID is given by its index.
"${g[@]}" flavor create big.2x --gpu-class h100-80gb --gpu-milli 2000 >/dev/null
"${g[@]}" org create acme >/dev/null
"${g[@]}" project create ml --org acme >/dev/null
"${g[@]}" quota create --project ml --gpu-class h100-80gb --limit-milli 2000 >/dev/null
w=$("${g[@]}" -o json run --project ml --flavor big.2x -- sh -c 'echo "devices=$CUDA_VISIBLE_DEVICES"' | jq -r .id)
wait_state "$w" succeeded 15
expect_contains "$("${g[@]}" logs "$w")" "devices=0,1" "work saw the declared GPUs"

# A restart with the same list adds nothing; an admin's drain of the node stays.
"${g[@]}" node update "$host" --state drain >/dev/null
stop_daemon
start_daemon "$TMP/gpuaas.db" --local-gpus "h100-80gb:2, 2:l4:GPU-dec1a7ed-0000-4000-8000-000000000002" \
  --log-dir "$TMP/logs"
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
sleep 2
expect_eq "$(gpus)" "$want" "the same GPUs after a restart"
expect_eq "$("${g[@]}" -o json node list | jq -r --arg h "$host" '.items[] | select(.name == $h) | .state')" \
  drain "the admin's drain stays"

# A shorter list: the GPU no longer declared turns down, kept.
stop_daemon
start_daemon "$TMP/gpuaas.db" --local-gpus "h100-80gb:2" --log-dir "$TMP/logs"
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
deadline=$((SECONDS + 15))
until [ "$(gpus | jq -r '.[] | select(.class == "l4") | .health')" = down ]; do
  [ $SECONDS -lt $deadline ] || fail "the undeclared GPU did not turn down: $(gpus)"
  sleep 0.2
done
expect_eq "$(gpus | jq length)" 4 "no GPU deleted"
stop_daemon
echo "local_declared: ok"
