#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# k8s.control_plane: the test control plane behaves as the Kubernetes backend
# will need it to, seen the way a C client sees it: curl over HTTPS with the
# CA and a bearer token, JSON in and out (jq only reads the answers). Run
# under with-k8s.sh (K8S_SERVER, K8S_CA, K8S_TOKEN, K8S_USER_TOKEN set).
#  - /version carries the release (clients such as Kueue parse it);
#  - no token is 401, a user without RBAC grants is 403;
#  - the fake GPU nodes carry the described nvidia.com/gpu, MIG resources
#    and GPU labels, and are Ready;
#  - a pod pinned with spec.nodeName asking for 2 GPUs and the annotation
#    gpuaas.io/expected-runtime=2s goes Running, then Succeeded with exit code 0;
#    gpuaas.test/exit-code=3 makes one Failed with exit code 3;
#  - a running pod deleted with gracePeriodSeconds=3 is still there (being
#    deleted) at first and gone after about 3 s;
#  - a watch from a list's resourceVersion replays those events;
#  - deleting the namespace completes (kube-controller-manager runs).
set -euo pipefail

: "${K8S_SERVER:?run under with-k8s.sh}" "${K8S_CA:?}" "${K8S_TOKEN:?}" "${K8S_USER_TOKEN:?}"
ns=smoke
fail() {
    echo "k8s.control_plane: FAIL: $*" >&2
    exit 1
}
step() { echo "k8s.control_plane: $*"; }

# req METHOD PATH [BODY [CONTENT-TYPE]]: body on stdout, HTTP status in $code
# (set in the caller's shell: call it directly, not in $(...), to read $code)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
req() {
    local m=$1 p=$2 body=${3:-} ct=${4:-application/json}
    local args=(-sS --cacert "$K8S_CA" -H "Authorization: Bearer ${TOKEN:-$K8S_TOKEN}"
        -H "Accept: application/json" -X "$m" -o "$tmp/body" -w '%{http_code}')
    [ -n "$body" ] && args+=(-H "Content-Type: $ct" --data-binary "$body")
    code=$(curl "${args[@]}" "$K8S_SERVER$p") || fail "curl $m $p failed"
    cat "$tmp/body"
}
must() { # expected-code METHOD PATH [BODY [CT]]: req that fails unless HTTP is as expected
    local want=$1
    shift
    req "$@" >"$tmp/must"
    [ "$code" = "$want" ] || fail "$1 $2: HTTP $code, wanted $want: $(head -c 300 "$tmp/must")"
    cat "$tmp/must"
}
now_ms() { date +%s%3N; }

# --- version, authentication, authorization --------------------------------
v=$(must 200 GET /version)
[ "$(jq -r .major <<<"$v")" = 1 ] && [[ $(jq -r .gitVersion <<<"$v") =~ ^v1\.[0-9]+\.[0-9]+$ ]] ||
    fail "/version lacks a release: $v"
step "server $(jq -r .gitVersion <<<"$v") at $K8S_SERVER"
code=$(curl -sS -o /dev/null -w '%{http_code}' --cacert "$K8S_CA" "$K8S_SERVER/api/v1/nodes")
[ "$code" = 401 ] || fail "a request without a token got $code, not 401"
TOKEN=$K8S_USER_TOKEN must 403 GET /api/v1/nodes >/dev/null
step "no token: 401; a user without grants: 403"

# --- the fake GPU nodes (tests/k8s/nodes.default) --------------------------
nodes=$(must 200 GET "/api/v1/nodes?labelSelector=nvidia.com%2Fgpu.present%3Dtrue")
[ "$(jq '.items | length' <<<"$nodes")" = 3 ] || fail "wanted 3 GPU nodes: $(jq -c '[.items[].metadata.name]' <<<"$nodes")"
check_node() { # name gpus product memory [resource count]
    local n
    n=$(jq --arg n "$1" '.items[] | select(.metadata.name == $n)' <<<"$nodes")
    [ -n "$n" ] || fail "no node $1"
    [ "$(jq -r '.status.allocatable["nvidia.com/gpu"]' <<<"$n")" = "$2" ] || fail "$1: allocatable gpu is not $2"
    [ "$(jq -r '.status.capacity["nvidia.com/gpu"]' <<<"$n")" = "$2" ] || fail "$1: capacity gpu is not $2"
    [ "$(jq -r '.metadata.labels["nvidia.com/gpu.product"]' <<<"$n")" = "$3" ] || fail "$1: product label"
    [ "$(jq -r '.metadata.labels["nvidia.com/gpu.memory"]' <<<"$n")" = "$4" ] || fail "$1: memory label"
    [ "$(jq -r '.metadata.annotations["kwok.x-k8s.io/node"]' <<<"$n")" = fake ] || fail "$1: not a kwok node"
    [ "$(jq -c '[.spec.taints[].key]' <<<"$n")" = '["kwok.x-k8s.io/node"]' ] ||
        fail "$1: taints are $(jq -c .spec.taints <<<"$n"), not only kwok's"
    [ "$(jq -r '.status.conditions[] | select(.type == "Ready") | .status' <<<"$n")" = True ] || fail "$1: not Ready"
    if [ $# -ge 6 ]; then
        [ "$(jq -r --arg r "$5" '.status.allocatable[$r]' <<<"$n")" = "$6" ] || fail "$1: $5 is not $6"
    fi
}
check_node kwok-h100-0 8 NVIDIA-H100-80GB-HBM3 81559
check_node kwok-h100-1 8 NVIDIA-H100-80GB-HBM3 81559
check_node kwok-a100-mig-0 4 NVIDIA-A100-SXM4-80GB 81920 nvidia.com/mig-1g.10gb 14
step "3 GPU nodes Ready with their nvidia.com/gpu, MIG resources and labels"

# --- a namespace, its default service account ------------------------------
must 201 POST /api/v1/namespaces "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$ns\"}}" >/dev/null
for ((i = 0; i < 100; i++)); do
    req GET "/api/v1/namespaces/$ns/serviceaccounts/default" >/dev/null
    [ "$code" = 200 ] && break
    sleep 0.2
done
[ "$code" = 200 ] || fail "namespace $ns got no default service account"
rv=$(must 200 GET "/api/v1/namespaces/$ns/pods" | jq -r .metadata.resourceVersion)
step "namespace $ns with its default service account; pods listed at resourceVersion $rv"

pod() { # name node gpus annotations-json
    jq -nc --arg n "$1" --arg node "$2" --arg g "$3" --argjson a "$4" '{
        apiVersion: "v1", kind: "Pod", metadata: {name: $n, annotations: $a},
        spec: {nodeName: $node, restartPolicy: "Never",
            tolerations: [{key: "kwok.x-k8s.io/node", operator: "Exists", effect: "NoSchedule"}],
            containers: [{name: "main", image: "busybox", command: ["sleep", "inf"],
                resources: {limits: {"nvidia.com/gpu": $g}, requests: {"nvidia.com/gpu": $g}}}]}}'
}
phase() { must 200 GET "/api/v1/namespaces/$ns/pods/$1" | jq -r .status.phase; }
wait_phase() { # pod phase-regex seconds
    local i p
    for ((i = 0; i < $3 * 10; i++)); do
        p=$(phase "$1")
        [[ $p =~ ^($2)$ ]] && return 0
        sleep 0.1
    done
    fail "pod $1 is $p, not $2, after $3 s"
}

# --- a pinned 2-GPU pod that runs for 2 s ----------------------------------
must 201 POST "/api/v1/namespaces/$ns/pods" "$(pod job 'kwok-h100-0' 2 '{"gpuaas.io/expected-runtime":"2s"}')" >/dev/null
# A slow machine may first see it Succeeded: the watch below checks that it
# was Running in between.
wait_phase job 'Running|Succeeded' 10
p=$(must 200 GET "/api/v1/namespaces/$ns/pods/job")
[ "$(jq -r '.spec.containers[0].resources.limits["nvidia.com/gpu"]' <<<"$p")" = 2 ] || fail "job lost its GPU limit"
[ -n "$(jq -r '.status.podIP // empty' <<<"$p")" ] || fail "a started pod without a podIP"
step "pod job (2 GPUs on kwok-h100-0) $(jq -r .status.phase <<<"$p")"
wait_phase job Succeeded 15
p=$(must 200 GET "/api/v1/namespaces/$ns/pods/job")
[ "$(jq -r '.status.containerStatuses[0].state.terminated.exitCode' <<<"$p")" = 0 ] || fail "job: exit code is not 0"
step "pod job Succeeded, exit code 0"

must 201 POST "/api/v1/namespaces/$ns/pods" \
    "$(pod crash 'kwok-a100-mig-0' 1 '{"gpuaas.io/expected-runtime":"1s","gpuaas.test/exit-code":"3"}')" >/dev/null
wait_phase crash Failed 15
[ "$(must 200 GET "/api/v1/namespaces/$ns/pods/crash" | jq -r '.status.containerStatuses[0].state.terminated.exitCode')" = 3 ] ||
    fail "crash: exit code is not 3"
step "pod crash Failed, exit code 3"

# --- graceful deletion: gone when the grace period ends, not before --------
must 201 POST "/api/v1/namespaces/$ns/pods" "$(pod long 'kwok-h100-1' 8 '{}')" >/dev/null
wait_phase long Running 10
t0=$(now_ms)
d=$(must 200 DELETE "/api/v1/namespaces/$ns/pods/long" '{"apiVersion":"v1","kind":"DeleteOptions","gracePeriodSeconds":3}')
[ "$(jq -r .metadata.deletionGracePeriodSeconds <<<"$d")" = 3 ] || fail "delete: no 3 s grace period: $(jq -c .metadata <<<"$d")"
req GET "/api/v1/namespaces/$ns/pods/long" >/dev/null
[ "$code" = 200 ] || fail "long was gone at once (HTTP $code), not after its grace period"
for ((i = 0; i < 150; i++)); do
    req GET "/api/v1/namespaces/$ns/pods/long" >/dev/null
    [ "$code" = 404 ] && break
    sleep 0.1
done
gone=$(($(now_ms) - t0))
[ "$code" = 404 ] || fail "long still there $gone ms after a delete with a 3 s grace period"
# Wide bounds: this checks behaviour (the grace is waited for), not timing.
[ "$gone" -ge 1500 ] || fail "long was gone after $gone ms, before its 3 s grace period"
[ "$gone" -le 10000 ] || fail "long was gone only after $gone ms (3 s grace)"
step "pod long deleted with a 3 s grace period: gone after $gone ms"

# --- a watch from the list's resourceVersion replays what happened ----------
w=$(curl -sS -N --max-time 10 --cacert "$K8S_CA" -H "Authorization: Bearer $K8S_TOKEN" \
    "$K8S_SERVER/api/v1/namespaces/$ns/pods?watch=1&resourceVersion=$rv&allowWatchBookmarks=true&timeoutSeconds=2") ||
    fail "the watch failed"
ev() { jq -rc --arg t "$1" --arg n "$2" 'select(.type == $t and .object.metadata.name == $n) | .object.status.phase' <<<"$w"; }
[ -n "$(ev ADDED job)" ] || fail "watch: no ADDED for job"
ev MODIFIED job | grep -qx Running || fail "watch: job never seen Running"
ev MODIFIED job | grep -qx Succeeded || fail "watch: job never seen Succeeded"
ev MODIFIED crash | grep -qx Failed || fail "watch: crash never seen Failed"
[ -n "$(ev DELETED long)" ] || fail "watch: no DELETED for long"
step "watch from resourceVersion $rv: $(jq -r .type <<<"$w" | sort | uniq -c | tr -s ' \n' ' ')"

# --- deleting the namespace completes ---------------------------------------
must 200 DELETE "/api/v1/namespaces/$ns" >/dev/null
for ((i = 0; i < 300; i++)); do
    req GET "/api/v1/namespaces/$ns" >/dev/null
    [ "$code" = 404 ] && break
    sleep 0.1
done
[ "$code" = 404 ] || fail "namespace $ns still there 30 s after its deletion"
step "namespace $ns deleted"
echo "k8s.control_plane: ok"
