#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# k8s.e2e: gpuaasd and the CLI on a Kubernetes cluster (a real kube-apiserver
# with kwok's fake GPU nodes, stood up by with-k8s.sh), end to end:
#  - a cluster whose kubeconfig is missing is refused (400); one whose token is
#    wrong says why at once in the log, and takes no work;
#  - the good cluster's nodes and GPUs (whole and MIG) come from its Node objects;
#  - a workload runs as a pod pinned to its node and succeeds, its events
#    "running" (pods asked for) then "started" (pods Running);
#  - gpuaas logs [-f] reads a running workload's pod log;
#  - P1 reclaims P2: the guests' pods are deleted with their grace, the
#    owners' pods then run; the ledger, both teams' events and one usage
#    record per run;
#  - gpuaasd killed (SIGKILL) mid-run: after its restart the running pod is
#    adopted, not lost, and a cancel ends it within its grace;
#  - a pod deleted by someone else fails its workload, saying so;
#  - the apiserver restarted mid-watch: running work stays, an end that
#    comes after it is seen, a cancel made while it is away is carried out
#    when it is back, and the daemon says it lost and found the watch;
#  - two clusters, one quota: a simulated cluster beside the Kubernetes one,
#    the owners' limit counts their work in both, and the timeline names each
#    allocation's cluster.
. "${GPUAAS_SOURCE_DIR:?}/tests/e2e/lib.sh"
: "${KUBECONFIG:?run through tests/k8s/with-k8s.sh}"

grace_s=3
flags=(--log-dir "$TMP/logs" --grace-s "$grace_s" --kube-sync-s 1
  --kube-tolerate kwok.x-k8s.io/node,nvidia.com/gpu --kube-default-image busybox)
start_daemon "$TMP/gpuaas.db" "${flags[@]}"
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
kapi() { # METHOD PATH: the apiserver's answer (admin)
  curl -sS --cacert "$K8S_CA" -H "Authorization: Bearer $K8S_TOKEN" -X "$1" "$K8S_SERVER$2"
}

pods_of() { # W N: the workload's pods, waiting up to 20 s for N of them ("running" comes
  # when gpuaas has placed the work and asked for its pods, which a loaded apiserver makes later)
  local deadline=$((SECONDS + 20)) p
  while :; do
    p=$(kapi GET "/api/v1/pods?labelSelector=gpuaas.io%2Fworkload%3D$1")
    if [ "$(jq '.items | length' <<<"$p")" = "$2" ] || [ $SECONDS -ge $deadline ]; then
      echo "$p"
      return
    fi
    sleep 0.2
  done
}

# --- a wrong kubeconfig: one clear line, nothing else lost ----------------------
out=$("${g[@]}" cluster create typo --backend kubernetes --endpoint "$TMP/no-such-kubeconfig" 2>&1) &&
  fail "a cluster with a kubeconfig that is not there was created: $out"
expect_contains "$out" "cannot read the kubeconfig" "a missing kubeconfig's error"
sed 's/token: .*/token: wrong/' "$KUBECONFIG" >"$TMP/wrong.kubeconfig"
"${g[@]}" cluster create wrong --backend kubernetes --endpoint "$TMP/wrong.kubeconfig" >/dev/null
for _ in $(seq 100); do
  grep -q "could not start the kubernetes backend.*cluster=wrong" "$DAEMON_LOG" && break
  sleep 0.1
done
line=$(grep "could not start the kubernetes backend.*cluster=wrong" "$DAEMON_LOG" | head -1)
expect_contains "$line" "401" "the wrong cluster's error"
expect_contains "$line" "credentials" "the wrong cluster's error"
"${g[@]}" cluster delete wrong >/dev/null

# --- the cluster's nodes and GPUs -------------------------------------------------
"${g[@]}" cluster create k8s --backend kubernetes --endpoint "$KUBECONFIG" >/dev/null
deadline=$((SECONDS + 30))
until [ "$("${g[@]}" -o json gpu list --limit 1000 | jq '[.items[] | select(.health == "ok")] | length')" = 36 ]; do
  [ $SECONDS -lt $deadline ] || fail "the cluster's GPUs did not appear: $("${g[@]}" gpu list --limit 1000)"
  sleep 0.2
done
nodes=$("${g[@]}" -o json node list)
expect_eq "$(jq -r '[.items[].name] | sort | join(",")' <<<"$nodes")" \
  "kwok-a100-mig-0,kwok-h100-0,kwok-h100-1" "the cluster's nodes"
expect_eq "$(jq -r '[.items[].state] | unique | join(",")' <<<"$nodes")" ready "their states"
expect_eq "$("${g[@]}" -o json gpu-class list | jq -r '[.items[].name] | sort | join(",")')" \
  "a100-80gb,a100-80gb/1g.10gb,a100-80gb/3g.40gb,h100" "GPU classes made from the nodes' labels and MIG resources"
"${g[@]}" flavor create h100.8x --gpu-class h100 --gpu-milli 8000 --vcpus 4 --memory-mib 8192 >/dev/null
"${g[@]}" flavor create h100.1x --gpu-class h100 --gpu-milli 1000 --vcpus 1 --memory-mib 1024 >/dev/null
owners_and_guests k8s 16000

# --- a run that succeeds ------------------------------------------------------
w=$("${g[@]}" -o json run --project owners --flavor h100.1x --owned --duration 2s -- echo hi | jq -r .id)
wait_state "$w" running 20
pods=$(pods_of "$w" 1)
expect_eq "$(jq '.items | length' <<<"$pods")" 1 "pods of workload $w"
expect_eq "$(jq -r '.items[0].spec.containers[0].resources.limits["nvidia.com/gpu"]' <<<"$pods")" 1 "its GPU limit"
node=$(jq -r '.items[0].spec.nodeName' <<<"$pods")
api GET "/v1/workloads/$w/allocations" "$ADMIN_TOKEN"
wait_state "$w" succeeded 20
api GET "/v1/workloads/$w" "$ADMIN_TOKEN"
expect_eq "$(jq -r .exit_code <<<"$BODY")" 0 "its exit code"
# "running" is written when its pods are asked for, "started" once they all run
ev=$("${g[@]}" -o json events --workload "$w" -n 0)
expect_eq "$(jq -r '[.items[].type] | join(",")' <<<"$ev")" \
  "submitted,admitted,running,started,succeeded" "a run's events"
[ "$(jq '[.items[] | select(.type == "running" or .type == "started") | .at_ms] | .[0] <= .[1]' <<<"$ev")" = true ] ||
  fail "started before running: $ev"
echo "k8s.e2e: workload $w ran as a pod on $node and succeeded"

# --- logs: the pod's log (kwok serves $K8S_POD_LOG as every pod's) -----------------
lw=$("${g[@]}" -o json run --project owners --flavor h100.1x --owned -- sleep inf | jq -r .id)
deadline=$((SECONDS + 20))
until "${g[@]}" -o json events --workload "$lw" -n 0 | jq -e '[.items[].type] | index("started")' >/dev/null; do
  [ $SECONDS -lt $deadline ] || fail "workload $lw never started: $("${g[@]}" events --workload "$lw" -n 0)"
  sleep 0.2
done
expect_contains "$("${g[@]}" logs "$lw")" "hello from kwok" "gpuaas logs of a pod"
"${g[@]}" logs -f "$lw" >"$TMP/follow.out" 2>&1 &
follower=$!
sleep 0.5
printf '%s stdout F %s\n' "$(date -u +%Y-%m-%dT%H:%M:%S.000000000Z)" "written while followed" >>"$K8S_POD_LOG"
deadline=$((SECONDS + 15))
until grep -q "written while followed" "$TMP/follow.out"; do
  [ $SECONDS -lt $deadline ] || fail "gpuaas logs -f did not show a new line: $(cat "$TMP/follow.out")"
  sleep 0.2
done
"${g[@]}" cancel "$lw" >/dev/null
wait_state "$lw" cancelled $((grace_s + 10))
for _ in $(seq 50); do kill -0 "$follower" 2>/dev/null || break; sleep 0.2; done
kill -0 "$follower" 2>/dev/null && fail "gpuaas logs -f still follows an ended workload"
wait "$follower" || true
echo "k8s.e2e: gpuaas logs [-f] read workload $lw's pod log"

# --- P1 reclaims P2 -------------------------------------------------------------
g1=$("${g[@]}" -o json run --project guests --flavor h100.8x --no-requeue --grace "${grace_s}s" -- sleep inf | jq -r .id)
g2=$("${g[@]}" -o json run --project guests --flavor h100.8x --no-requeue --grace "${grace_s}s" -- sleep inf | jq -r .id)
wait_state "$g1" running 20
wait_state "$g2" running 20
t_submit=$(date +%s%3N)
own=$("${g[@]}" -o json run --project owners --flavor h100.8x --owned --duration 2s -- train | jq -r .id)
wait_state "$own" running $((grace_s + 20))
t_running=$(date +%s%3N)
victims=0
for v in "$g1" "$g2"; do
  [ "$(state_of "$v")" = preempted ] && victims=$((victims + 1))
done
expect_eq "$victims" 1 "guests preempted for one 8-GPU owner workload (no needless victim)"
[ $((t_running - t_submit)) -lt $((grace_s * 1000 + 5000)) ] ||
  fail "the owners ran $((t_running - t_submit)) ms after their submit (grace ${grace_s} s)"
api GET "/v1/preemptions" "$ADMIN_TOKEN"
expect_eq "$(jq '.items | length' <<<"$BODY")" 1 "one preemption in the ledger"
victim=$(jq -r '.items[0].victims[0].workload_id' <<<"$BODY")
expect_eq "$(jq '.items[0].victims | length' <<<"$BODY")" 1 "victims in the ledger"
reclaim_ms=$(jq '.items[0].reclaim_ms' <<<"$BODY")
[ "$reclaim_ms" != null ] || fail "the reclaim never completed: $BODY"
echo "k8s.e2e: P1 ran $((t_running - t_submit)) ms after its submit; reclaim_ms=$reclaim_ms (grace ${grace_s} s)"
ev=$("${g[@]}" -o json events --workload "$victim" -n 0)
expect_eq "$(jq -r '[.items[].type | select(. != "started")] | join(",")' <<<"$ev")" \
  "submitted,admitted,running,preempting,preempted" "the victim's events"
ev=$("${g[@]}" -o json events --workload "$own" -n 0)
expect_contains "$(jq -r '[.items[].type] | join(",")' <<<"$ev")" "running" "the owners' events"
wait_state "$own" succeeded 20
ev=$("${g[@]}" -o json events --workload "$own" -n 0)
expect_contains "$(jq -r '[.items[].type] | join(",")' <<<"$ev")" "running,started" "the owners' events"
for w2 in "$victim" "$own"; do
  expect_eq "$(sqlite3 "$TMP/gpuaas.db" "SELECT count(*) FROM usage_records WHERE workload_id = $w2")" 1 \
    "usage records of workload $w2"
done
[ -z "$(kapi GET "/api/v1/pods?labelSelector=gpuaas.io%2Fworkload%3D$victim" | jq -r '.items[].metadata.name')" ] ||
  fail "the victim's pod is still there"
other=$([ "$victim" = "$g1" ] && echo "$g2" || echo "$g1")
"${g[@]}" cancel "$other" >/dev/null
wait_state "$other" cancelled $((grace_s + 10))

# --- SIGKILL of gpuaasd mid-run: the pod is adopted --------------------------------
long=$("${g[@]}" -o json run --project owners --flavor h100.1x --owned --grace 2s -- sleep inf | jq -r .id)
wait_state "$long" running 20
kill_daemon
start_daemon "$TMP/gpuaas.db" "${flags[@]}"
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
sleep 2
expect_eq "$(state_of "$long")" running "the workload after gpuaasd's restart"
expect_eq "$(kapi GET "/api/v1/pods?labelSelector=gpuaas.io%2Fworkload%3D$long" | jq '.items | length')" 1 \
  "its pod after the restart"
"${g[@]}" cancel "$long" >/dev/null
wait_state "$long" cancelled 15

# --- a pod deleted by someone else ------------------------------------------------
gone=$("${g[@]}" -o json run --project owners --flavor h100.1x --owned -- sleep inf | jq -r .id)
wait_state "$gone" running 20
pod=$(pods_of "$gone" 1 | jq -r '.items[0].metadata | "\(.namespace)/\(.name)"')
kapi DELETE "/api/v1/namespaces/${pod%/*}/pods/${pod#*/}?gracePeriodSeconds=0" >/dev/null
wait_state "$gone" failed 15
api GET "/v1/workloads/$gone" "$ADMIN_TOKEN"
expect_contains "$(jq -r .reason <<<"$BODY")" "deleted outside gpuaas" "its reason"

# --- the apiserver restarted mid-watch: nothing is lost -----------------------------
during=$("${g[@]}" -o json run --project owners --flavor h100.1x --owned --duration 8s -- work | jq -r .id)
wait_state "$during" running 20
stay=$("${g[@]}" -o json run --project owners --flavor h100.1x --owned --grace 1s -- sleep inf | jq -r .id)
wait_state "$stay" running 20
bash "$GPUAAS_SOURCE_DIR/tests/k8s/restart-apiserver.sh" "$K8S_DIR" 2
expect_eq "$(state_of "$stay")" running "running work across the apiserver's restart"
wait_state "$during" succeeded 30
"${g[@]}" cancel "$stay" >/dev/null
wait_state "$stay" cancelled 15
# A cancel while the apiserver is away is carried out once it is back.
away=$("${g[@]}" -o json run --project owners --flavor h100.1x --owned --grace 1s -- sleep inf | jq -r .id)
wait_state "$away" running 20
bash "$GPUAAS_SOURCE_DIR/tests/k8s/restart-apiserver.sh" "$K8S_DIR" 4 &
restarting=$!
for _ in $(seq 100); do
  curl -sS --max-time 1 --cacert "$K8S_CA" "$K8S_SERVER/readyz" >/dev/null 2>&1 || break
  sleep 0.1
done
"${g[@]}" cancel "$away" >/dev/null
wait "$restarting" || fail "the apiserver did not come back"
wait_state "$away" cancelled 20
[ -z "$(kapi GET "/api/v1/pods?labelSelector=gpuaas.io%2Fworkload%3D$away" | jq -r '.items[].metadata.name')" ] ||
  fail "the pod of work cancelled while the apiserver was away is still there"
grep -q "cannot follow the pods" "$DAEMON_LOG" || fail "the daemon did not say it lost the watch"
grep -q "following the pods again" "$DAEMON_LOG" || fail "the daemon did not say it follows the pods again"

# --- two clusters, one quota and one timeline ----------------------------------------
"${g[@]}" cluster create sim2 --backend sim >/dev/null
"${g[@]}" node create sim-node --cluster sim2 --labels site=sim >/dev/null
for i in 0 1 2 3 4 5 6 7; do
  "${g[@]}" gpu create --node sim2/sim-node --index "$i" --gpu-class h100 --uuid "GPU-sim2-$i" >/dev/null
done
"${g[@]}" flavor create h100.8x-sim --gpu-class h100 --gpu-milli 8000 --node-selector site=sim >/dev/null
quota=$("${g[@]}" -o json quota list | jq -r --arg p "$("${g[@]}" -o json project show owners | jq -r .id)" \
  '.items[] | select((.project_id | tostring) == $p) | .id')
"${g[@]}" quota update "$quota" --limit-milli 9000 >/dev/null
on_sim=$("${g[@]}" -o json run --project owners --flavor h100.8x-sim --duration 10m -- work | jq -r .id)
wait_state "$on_sim" running 20
on_k8s=$("${g[@]}" -o json run --project owners --flavor h100.1x -- sleep inf | jq -r .id)
wait_state "$on_k8s" running 20
over=$("${g[@]}" -o json run --project owners --flavor h100.1x -- sleep inf | jq -r .id)
sleep 1
api GET "/v1/workloads/$over" "$ADMIN_TOKEN"
expect_eq "$(jq -r .state <<<"$BODY")" queued "the tenth GPU over the limit, though the cluster has room"
expect_contains "$(jq -r .reason <<<"$BODY")" "project at its limit 9/9" "one quota over both clusters"
tl=$("${g[@]}" timeline --project owners --since 5m)
expect_contains "$tl" "sim2/sim-node" "the timeline names the simulated cluster's node"
expect_contains "$tl" "k8s/kwok-h100-" "and the Kubernetes cluster's"
"${g[@]}" cancel "$on_sim" "$on_k8s" "$over" >/dev/null
for w in "$on_sim" "$on_k8s" "$over"; do wait_state "$w" cancelled 20; done
"${g[@]}" quota update "$quota" --limit-milli 16000 >/dev/null

open_allocs=$(sqlite3 "$TMP/gpuaas.db" "SELECT count(*) FROM allocations WHERE ended_ms IS NULL")
expect_eq "$open_allocs" 0 "open allocations"
out=$("${g[@]}" usage verify) || fail "usage verify: $out"
expect_contains "$out" "ledger ok" "the usage ledger"
stop_daemon
echo "k8s.e2e: ok"
