#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# up.sh DIR [NODES-FILE]: stands up a real Kubernetes control plane for tests,
# demos and benchmarks, everything on 127.0.0.1 and under DIR (created; must
# be empty or absent): etcd, kube-apiserver (HTTPS, bearer tokens, RBAC),
# kube-controller-manager with only the controllers a namespace needs
# (service accounts, namespace deletion, garbage collection; see
# GPUAAS_K8S_KCM_CONTROLLERS below) and kwok, which
# simulates the fake GPU nodes described in NODES-FILE (default
# tests/k8s/nodes.default) and their pods' lifecycles (tests/k8s/
# kwok-stages.yaml). Binaries come from build.sh's cache (built when absent).
# Waits until everything is ready and every node is Ready, then writes
#   DIR/kubeconfig   an admin (system:masters) kubeconfig for clients;
#   DIR/env          K8S_SERVER, K8S_CA, K8S_TOKEN (admin), K8S_USER_TOKEN (a
#                    user with no RBAC grants), KUBECONFIG, K8S_DIR, ...
# and prints nothing else on success. down.sh DIR stops it. Ports are picked
# free below the kernel's ephemeral range; a port taken between the check
# and the bind fails the start (with-k8s.sh tries again).
# Test use only: the tokens sit in DIR in plain text, DIR is mode 0700.
set -euo pipefail

me=up.sh
die() {
    echo "$me: $*" >&2
    exit 1
}
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-}
nodes_file=${2:-${GPUAAS_K8S_NODES:-$here/nodes.default}}
[ -n "$dir" ] || die "usage: $me DIR [NODES-FILE]"
[ -r "$nodes_file" ] || die "cannot read the node description $nodes_file"
for tool in openssl curl jq ss setsid; do
    command -v "$tool" >/dev/null || die "needs $tool (scripts/deps.sh installs it)"
done
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
[ -z "$(ls -A "$dir")" ] || die "$dir is not empty"
chmod 700 "$dir"
mkdir -p "$dir/pki" "$dir/log" "$dir/run" "$dir/etcd"
# A failed start leaves nothing running (the logs stay in DIR).
trap '[ $? = 0 ] || "$here/down.sh" "$dir" --keep' EXIT

# Binaries: build.sh prints the directory on its last line.
out=$("$here/build.sh") || die "the control plane could not be built (see above)"
bin=$(sed -n 's/^k8s-build: bin=\([^ ]*\) .*/\1/p' <<<"$out" | tail -n1)
for b in etcd kube-apiserver kube-controller-manager kwok; do
    [ -x "$bin/$b" ] || die "build.sh left no $b in '$bin'"
done
ln -s "$bin" "$dir/bin"

# --- ports: four consecutive free ones below the ephemeral range ---------
read -r eph_low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || eph_low=32768
port_free() { [ -z "$(ss -Hant "( sport = :$1 or dport = :$1 )" 2>/dev/null)" ]; }
base=
for _ in $(seq 50); do
    b=$((20000 + RANDOM % (eph_low - 20000 - 10)))
    port_free "$b" && port_free $((b + 1)) && port_free $((b + 2)) && port_free $((b + 3)) &&
        base=$b && break
done
[ -n "$base" ] || die "no four free ports found"
etcd_port=$base
etcd_peer_port=$((base + 1))
api_port=$((base + 2))
kwok_port=$((base + 3)) # kwok's kubelet-like server: pod logs
server=https://127.0.0.1:$api_port

# --- PKI and credentials, made here, for this run only -----------------------
pki=$dir/pki
ossl() { openssl "$@" 2>>"$dir/log/openssl.log" >/dev/null || die "openssl $1 failed (see $dir/log/openssl.log)"; }
ossl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=gpuaas-test-ca" \
    -keyout "$pki/ca.key" -out "$pki/ca.crt"
ossl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
    -keyout "$pki/server.key" -out "$pki/server.csr"
printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default.svc" \
    "extendedKeyUsage=serverAuth" "keyUsage=digitalSignature,keyEncipherment" >"$pki/server.ext"
ossl x509 -req -in "$pki/server.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
    -CAcreateserial -days 2 -extfile "$pki/server.ext" -out "$pki/server.crt"
# kwok serves pod logs as a kubelet would, over HTTPS on 127.0.0.1; the apiserver checks it
ossl req -newkey rsa:2048 -nodes -subj "/CN=kwok-kubelet" \
    -keyout "$pki/kwok.key" -out "$pki/kwok.csr"
printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" "extendedKeyUsage=serverAuth" \
    "keyUsage=digitalSignature,keyEncipherment" >"$pki/kwok.ext"
ossl x509 -req -in "$pki/kwok.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
    -CAcreateserial -days 2 -extfile "$pki/kwok.ext" -out "$pki/kwok.crt"
ossl genrsa -out "$pki/sa.key" 2048
ossl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub"
tok() { openssl rand -hex 24; }
admin_token=$(tok)
user_token=$(tok)
kcm_token=$(tok)
kwok_token=$(tok)
# token,user,uid,"groups": the admin, a user with no grants (RBAC is on:
# tests give it what they mean to test), and the two controllers.
cat >"$dir/tokens.csv" <<EOF
$admin_token,gpuaas-admin,uid-admin,"system:masters"
$user_token,gpuaas-user,uid-user,"gpuaas:users"
$kcm_token,system:kube-controller-manager,uid-kcm,"system:masters"
$kwok_token,kwok-controller,uid-kwok,"system:masters"
EOF
chmod 600 "$dir/tokens.csv" "$pki"/*.key

kubeconfig() { # file user token
    cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: gpuaas-test
  cluster:
    server: $server
    certificate-authority: $pki/ca.crt
users:
- name: $2
  user:
    token: $3
contexts:
- name: gpuaas-test
  context:
    cluster: gpuaas-test
    user: $2
current-context: gpuaas-test
EOF
    chmod 600 "$1"
}
kubeconfig "$dir/kubeconfig" gpuaas-admin "$admin_token"
kubeconfig "$dir/kcm.kubeconfig" system:kube-controller-manager "$kcm_token"
kubeconfig "$dir/kwok.kubeconfig" kwok-controller "$kwok_token"

# --- processes -----------------------------------------------------------------
# Each in a session of its own (setsid), its pid in DIR/run/NAME.pid; every
# command line names DIR, which down.sh checks before it signals a pid.
start() { # name args...
    local name=$1
    shift
    setsid "$dir/bin/$name" "$@" </dev/null >"$dir/log/$name.log" 2>&1 &
    echo $! >"$dir/run/$name.pid"
}
alive() { kill -0 "$(cat "$dir/run/$1.pid")" 2>/dev/null; }
wait_for() { # name seconds command...
    local name=$1 secs=$2 i
    shift 2
    for ((i = 0; i < secs * 5; i++)); do
        "$@" >/dev/null 2>&1 && return 0
        alive "$name" || die "$name exited: $(tail -n 3 "$dir/log/$name.log" | tr '\n' ' ')"
        sleep 0.2
    done
    die "$name not ready after ${secs}s: $(tail -n 3 "$dir/log/$name.log" | tr '\n' ' ')"
}
api() { # method path [curl args...]: the admin's request, body on stdout
    local m=$1 p=$2
    shift 2
    curl -sS --fail-with-body --cacert "$pki/ca.crt" -H "Authorization: Bearer $admin_token" \
        -X "$m" "$server$p" "$@"
}

start etcd --name gpuaas-test --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" \
    --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" \
    --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
    --initial-cluster "gpuaas-test=http://127.0.0.1:$etcd_peer_port" \
    --listen-metrics-urls "" --quota-backend-bytes 1073741824 \
    --unsafe-no-fsync --log-level warn
etcd_health() { curl -sf "http://127.0.0.1:$etcd_port/health" | grep -q '"health":"true"'; }
wait_for etcd 30 etcd_health

# No kubelets: the endpoint reconciler is off (loopback is not a valid
# endpoint address) and so is anonymous access (every request carries a token).
start kube-apiserver \
    --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
    --cert-dir "$pki" --tls-cert-file "$pki/server.crt" --tls-private-key-file "$pki/server.key" \
    --client-ca-file "$pki/ca.crt" --token-auth-file "$dir/tokens.csv" \
    --anonymous-auth=false --authorization-mode RBAC \
    --service-account-issuer https://kubernetes.default.svc \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-cluster-ip-range 10.96.0.0/16 --endpoint-reconciler-type none \
    --kubelet-preferred-address-types InternalIP --kubelet-certificate-authority "$pki/ca.crt" \
    --profiling=false --v 1
api_ready() { api GET /readyz | grep -qx ok; }
wait_for kube-apiserver 120 api_ready

# GPUAAS_K8S_KCM_CONTROLLERS replaces the list of controllers (bench/k8s_bench.sh
# --kueue-jobs adds job); GPUAAS_K8S_KCM_ARGS adds flags (split on spaces).
kcm_controllers=${GPUAAS_K8S_KCM_CONTROLLERS:-serviceaccount,serviceaccount-token,namespace,garbagecollector}
read -ra kcm_args <<<"${GPUAAS_K8S_KCM_ARGS:-}"
start kube-controller-manager --kubeconfig "$dir/kcm.kubeconfig" \
    --controllers "$kcm_controllers" \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --leader-elect=false --secure-port 0 --use-service-account-credentials=false \
    --profiling=false --v 1 ${kcm_args[@]+"${kcm_args[@]}"}
default_sa() { api GET /api/v1/namespaces/default/serviceaccounts/default; }
wait_for kube-controller-manager 60 default_sa

# Every pod's log (its container "work") is DIR/pod.log, in the CRI log format a kubelet
# reads; tests append lines to it. kwok serves it as each node's kubelet (node-port).
printf '%s stdout F %s\n' "$(date -u +%Y-%m-%dT%H:%M:%S.000000000Z)" "hello from kwok" >"$dir/pod.log"
cp "$here/kwok-stages.yaml" "$dir/kwok.yaml"
cat >>"$dir/kwok.yaml" <<EOF
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: gpuaas-pod-log
spec:
  logs:
  - containers: [work]
    logsFile: $dir/pod.log
    follow: true
EOF
start kwok --kubeconfig "$dir/kwok.kubeconfig" --config "$dir/kwok.yaml" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
    --server-address "127.0.0.1:$kwok_port" --node-ip 127.0.0.1 --node-port "$kwok_port" \
    --tls-cert-file "$pki/kwok.crt" --tls-private-key-file "$pki/kwok.key"

# --- fake GPU nodes ------------------------------------------------------------
names=()
while read -r prefix count gpus product mem extra; do
    [[ -z "$prefix" || "$prefix" == \#* ]] && continue
    [[ $prefix =~ ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$ && $count =~ ^[0-9]+$ && $gpus =~ ^[0-9]+$ &&
        $mem =~ ^[0-9]+$ && $product =~ ^[A-Za-z0-9._-]+$ ]] ||
        die "bad line in $nodes_file: $prefix $count $gpus $product $mem $extra"
    res=$(jq -n --arg g "$gpus" '{cpu: "128", memory: "2Ti", pods: "110",
        "ephemeral-storage": "10Ti", "nvidia.com/gpu": $g}')
    mig=false
    if [ "${extra:--}" != - ]; then
        IFS=, read -ra kvs <<<"$extra"
        for kv in "${kvs[@]}"; do
            [[ $kv =~ ^[a-z0-9./-]+=[0-9]+$ ]] || die "bad resource '$kv' in $nodes_file"
            res=$(jq --arg k "${kv%%=*}" --arg v "${kv#*=}" '. + {($k): $v}' <<<"$res")
            [[ $kv == nvidia.com/mig-* ]] && mig=true
        done
    fi
    for ((i = 0; i < count; i++)); do
        name=kwok-$prefix-$i
        node=$(jq -n --arg n "$name" --arg p "$product" --arg m "$mem" --arg g "$gpus" \
            --argjson mig "$mig" --argjson res "$res" '{
            apiVersion: "v1", kind: "Node",
            metadata: {name: $n,
                annotations: {"kwok.x-k8s.io/node": "fake"},
                labels: ({"kubernetes.io/hostname": $n, "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64", type: "kwok",
                    "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": $p,
                    "nvidia.com/gpu.memory": $m, "nvidia.com/gpu.count": $g}
                    + (if $mig then {"nvidia.com/mig.strategy": "mixed"} else {} end))},
            spec: {taints: [{key: "kwok.x-k8s.io/node", value: "fake", effect: "NoSchedule"}]},
            status: {capacity: $res, allocatable: $res}}')
        api POST /api/v1/nodes -H 'Content-Type: application/json' -d "$node" >/dev/null ||
            die "could not create node $name"
        # The status given at creation is kept, but say it again through the
        # status subresource, which is what a kubelet (or device plugin) uses.
        api PATCH "/api/v1/nodes/$name/status" -H 'Content-Type: application/merge-patch+json' \
            -d "$(jq -n --argjson res "$res" '{status: {capacity: $res, allocatable: $res}}')" \
            >/dev/null || die "could not set the capacity of node $name"
        names+=("$name")
    done
done <"$nodes_file"
[ ${#names[@]} -gt 0 ] || die "$nodes_file describes no node"
all_ready() {
    local n
    n=$(api GET /api/v1/nodes | jq '[.items[] | select(.status.conditions // [] |
        any(.type == "Ready" and .status == "True"))] | length')
    [ "$n" = "${#names[@]}" ]
}
wait_for kwok 60 all_ready
# The apiserver taints a new node node.kubernetes.io/not-ready; the node
# lifecycle controller, which would lift it once the node is Ready, does not
# run here (no kubelets to watch), so lift it as it would.
for name in "${names[@]}"; do
    api PATCH "/api/v1/nodes/$name" -H 'Content-Type: application/merge-patch+json' -d \
        '{"spec":{"taints":[{"key":"kwok.x-k8s.io/node","value":"fake","effect":"NoSchedule"}]}}' \
        >/dev/null || die "could not lift the not-ready taint of $name"
done

cat >"$dir/env" <<EOF
K8S_DIR=$dir
K8S_SERVER=$server
K8S_CA=$pki/ca.crt
K8S_TOKEN=$admin_token
K8S_USER_TOKEN=$user_token
KUBECONFIG=$dir/kubeconfig
K8S_NODES="${names[*]}"
K8S_BIN=$bin
K8S_POD_LOG=$dir/pod.log
EOF
chmod 600 "$dir/env"
