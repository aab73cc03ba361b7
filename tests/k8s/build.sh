#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Builds the test control plane (kube-apiserver, kube-controller-manager,
# etcd, kwok) from the Go
# module proxy through the wrapper modules in tests/k8s/gomod and
# tests/k8s/kwokmod, into a per-machine cache outside the checkout
# ($GPUAAS_K8S_CACHE, default /var/cache/gpuaas-k8s). Binaries are kept in a
# directory keyed by the versions and the go.sum contents, so a second run
# only checks they are there. Prints what it built and how long it took; a
# failed build prints one line saying why (the full log stays in the cache).
# On success prints nothing else to stdout but the last line
#   k8s-build: bin=<dir> ...
# and the directory is also written to $GPUAAS_K8S_CACHE/current-bin.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.env"
. "$here/goenv.sh"
. "$here/gobuild.sh"

fail() { echo "k8s-build: FAILED: $*" >&2; exit 1; }

[ -x "$GO" ] || fail "no Go toolchain (looked for /usr/local/go/bin/go and go on PATH)"
mkdir -p "$GPUAAS_K8S_CACHE/bin" "$GPUAAS_K8S_CACHE/logs" 2>/dev/null ||
    fail "cannot create the cache directory $GPUAAS_K8S_CACHE"

key=$(cat "$here/gomod/go.mod" "$here/gomod/go.sum" "$here/kwokmod/go.mod" \
    "$here/kwokmod/go.sum" "$here/versions.env" | sha256sum | cut -c1-12)
bin=$GPUAAS_K8S_CACHE/bin/k8s-$K8S_VERSION-kwok-$KWOK_VERSION-$key

exec 9>"$GPUAAS_K8S_CACHE/build.lock"
flock 9 # two test runs at once build once

# name|module dir|package|ldflags
k8s_minor=${K8S_VERSION#v1.}
k8s_minor=${k8s_minor%%.*}
# Kueue and other clients parse /version: it must carry a real version.
vpkgs="k8s.io/component-base/version k8s.io/client-go/pkg/version"
ld="-s -w"
for p in $vpkgs; do
    ld="$ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$k8s_minor"
    ld="$ld -X $p.gitCommit=0000000000000000000000000000000000000000"
    ld="$ld -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done
targets=(
    "kube-apiserver|gomod|k8s.io/kubernetes/cmd/kube-apiserver|$ld"
    "kube-controller-manager|gomod|k8s.io/kubernetes/cmd/kube-controller-manager|$ld"
    "etcd|gomod|go.etcd.io/etcd/server/v3|-s -w"
    "kwok|kwokmod|sigs.k8s.io/kwok/cmd/kwok|-s -w"
)

mkdir -p "$bin.tmp"
total_start=$(date +%s)
built=""
for t in "${targets[@]}"; do
    IFS='|' read -r name dir pkg flags <<<"$t"
    [ -x "$bin/$name" ] && continue
    go_build_one k8s-build "$name" "$here/$dir" "$pkg" "$flags" "$bin.tmp"
    built="$built $name"
done
mkdir -p "$bin"
for f in "$bin.tmp"/*; do [ -e "$f" ] && mv "$f" "$bin/"; done
rmdir "$bin.tmp"
echo "$bin" >"$GPUAAS_K8S_CACHE/current-bin"
# Binaries of other versions go (the module and build caches stay): a running
# control plane keeps the files it has open.
for old in "$GPUAAS_K8S_CACHE"/bin/k8s-*; do
    [ "$old" = "$bin" ] || rm -rf "$old"
done
secs=$(($(date +%s) - total_start))
echo "k8s-build: bin=$bin built=[${built# }] kubernetes=$K8S_VERSION kwok=$KWOK_VERSION in ${secs}s"
