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
#
# With --jobs it also builds what bench/k8s_bench.sh --kueue-jobs runs: Kueue's
# manager (sigs.k8s.io/kueue/cmd/kueue, with its batch/Job integration) from
# the same wrapper module, and kube-scheduler from the control plane's module
# tests/k8s/gomod (the same k8s.io/kubernetes release as kube-apiserver), so
# that Jobs' pods get bound to kwok's nodes. kube-scheduler is built here and
# not by build.sh because only this bench mode needs it: the test command
# keeps its build and its cache key. The key of this directory covers both
# modules, so a new control plane release rebuilds the scheduler here too.
#
#   usage: build-kueue.sh [--jobs]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
jobs=
case ${1:-} in
--jobs) jobs=1 ;;
"") ;;
*) echo "usage: build-kueue.sh [--jobs]" >&2; exit 2 ;;
esac
. "$here/kueue.env"
. "$here/versions.env"
. "$here/goenv.sh"
. "$here/gobuild.sh"

fail() { echo "kueue-build: FAILED: $*" >&2; exit 1; }

[ -x "$GO" ] || fail "no Go toolchain (looked for /usr/local/go/bin/go and go on PATH)"
mkdir -p "$GPUAAS_K8S_CACHE/bin" "$GPUAAS_K8S_CACHE/logs" 2>/dev/null ||
    fail "cannot create the cache directory $GPUAAS_K8S_CACHE"
key=$(cat "$here/kueuemod/go.mod" "$here/kueuemod/go.sum" "$here/kueue.env" \
    "$here/gomod/go.mod" "$here/gomod/go.sum" "$here/versions.env" |
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
if [ -n "$jobs" ]; then
    if [ ! -x "$bin/kueue" ]; then
        go_build_one kueue-build kueue "$here/kueuemod" sigs.k8s.io/kueue/cmd/kueue "-s -w" "$bin.tmp"
        built="$built kueue"
    fi
    if [ ! -x "$bin/kube-scheduler" ]; then
        # The version the apiserver reports, as build.sh stamps its binaries.
        minor=${K8S_VERSION#v1.}
        minor=${minor%%.*}
        ld="-s -w"
        for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
            ld="$ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
            ld="$ld -X $p.gitCommit=0000000000000000000000000000000000000000"
            ld="$ld -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
        done
        go_build_one kueue-build kube-scheduler "$here/gomod" k8s.io/kubernetes/cmd/kube-scheduler \
            "$ld" "$bin.tmp"
        built="$built kube-scheduler"
    fi
fi
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
