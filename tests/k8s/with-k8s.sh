#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# with-k8s.sh COMMAND [ARG...]: runs COMMAND against a throwaway Kubernetes
# control plane (up.sh: etcd, kube-apiserver, kube-controller-manager, kwok
# with the fake GPU nodes of $GPUAAS_K8S_NODES or tests/k8s/nodes.default),
# with DIR/env exported (K8S_SERVER, K8S_CA, K8S_TOKEN, K8S_USER_TOKEN,
# KUBECONFIG, K8S_DIR, K8S_NODES), and stops all of it afterwards, whatever
# happens (trap). Exits with COMMAND's status. When the control plane cannot
# be built or started it fails, saying why in one line: never a skip.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || {
    echo "usage: with-k8s.sh COMMAND [ARG...]" >&2
    exit 2
}
dir=$(mktemp -d "${TMPDIR:-/tmp}/gpuaas-k8s.XXXXXX")
cleanup() {
    local rc=$?
    if [ "$rc" != 0 ] && [ -d "$dir/log" ]; then
        echo "with-k8s.sh: failed ($rc); the end of the control plane's logs:" >&2
        for f in "$dir"/log/*.log; do
            echo "--- ${f##*/}" >&2
            tail -n 8 "$f" >&2
        done
    fi
    "$here/down.sh" "$dir"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Build first, once, so a retry below never rebuilds and a build failure is
# reported as such.
"$here/build.sh" >/dev/null || exit 1
ok=0
for attempt in 1 2 3; do
    "$here/down.sh" "$dir" && mkdir -p "$dir"
    if "$here/up.sh" "$dir"; then
        ok=1
        break
    fi
    echo "with-k8s.sh: up.sh failed (attempt $attempt)" >&2
done
[ "$ok" = 1 ] || exit 1

set -a
. "$dir/env"
set +a
"$@"
