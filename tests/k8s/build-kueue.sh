#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Builds the peer bench/k8s_bench.sh measures gpuaas against: Kueue's
# scheduler performance harness (minimalkueue: Kueue's core controllers and
# scheduler, no webhooks; runner: makes the ClusterQueues and Workloads, plays
# their run times, records admissions) from the Go module proxy through the
# wrapper module tests/k8s/kueuemod, into the same per-machine cache as the
# control plane. Not part of the test command. Prints one last line
#   kueue-build: bin=<dir> ...
# and the CRD directory of that release, which the bench applies.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/kueue.env"
. "$here/goenv.sh"
. "$here/gobuild.sh"

fail() { echo "kueue-build: FAILED: $*" >&2; exit 1; }

[ -x "$GO" ] || fail "no Go toolchain (looked for /usr/local/go/bin/go and go on PATH)"
mkdir -p "$GPUAAS_K8S_CACHE/bin" "$GPUAAS_K8S_CACHE/logs" 2>/dev/null ||
    fail "cannot create the cache directory $GPUAAS_K8S_CACHE"
key=$(cat "$here/kueuemod/go.mod" "$here/kueuemod/go.sum" "$here/kueue.env" |
    sha256sum | cut -c1-12)
bin=$GPUAAS_K8S_CACHE/bin/kueue-$KUEUE_VERSION-$key
exec 9>"$GPUAAS_K8S_CACHE/build-kueue.lock"
flock 9

pkgdir=sigs.k8s.io/kueue/test/performance/scheduler
total_start=$(date +%s)
built=""
mkdir -p "$bin.tmp"
for name in minimalkueue runner; do
    [ -x "$bin/$name" ] && continue
    go_build_one kueue-build "$name" "$here/kueuemod" "$pkgdir/$name" "-s -w" "$bin.tmp"
    built="$built $name"
done
mkdir -p "$bin"
for f in "$bin.tmp"/*; do [ -e "$f" ] && mv "$f" "$bin/"; done
rmdir "$bin.tmp"
# The release's CRDs (the bases, without the conversion webhook the
# kustomize overlays add: the harness runs without webhooks).
crds=$(cd "$here/kueuemod" && "$GO" list -m -f '{{.Dir}}' sigs.k8s.io/kueue)/config/components/crd/bases
[ -d "$crds" ] || fail "no CRD directory in the module ($crds)"
for old in "$GPUAAS_K8S_CACHE"/bin/kueue-*; do
    [ "$old" = "$bin" ] || rm -rf "$old"
done
echo "kueue-build: bin=$bin crds=$crds built=[${built# }] kueue=$KUEUE_VERSION in $(($(date +%s) - total_start))s"
