#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# down.sh DIR [--keep]: stops the control plane up.sh started in DIR (kwok,
# kube-controller-manager, kube-apiserver, etcd, in that order, after Kueue's
# manager and kube-scheduler where bench/k8s_bench.sh --kueue-jobs started
# them with their pids in DIR/run) and removes
# DIR unless --keep. Safe to run twice, or on a half-started DIR. Only pids
# from DIR/run/*.pid are signalled, each checked first to be a process whose
# command line names DIR (so a recycled pid is left alone): TERM, then KILL
# after 10 s. Exits 1 if any of them is still alive at the end.
set -uo pipefail

dir=${1:-}
keep=${2:-}
[ -n "$dir" ] || {
    echo "usage: down.sh DIR [--keep]" >&2
    exit 1
}
[ -d "$dir" ] || exit 0
dir=$(cd "$dir" && pwd)

ours() { # pid file -> pid if it is still one of DIR's processes
    local pid
    [ -f "$1" ] || return 1
    pid=$(tr -dc '0-9' <"$1")
    [ -n "$pid" ] || return 1
    tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF "$dir/" || return 1
    echo "$pid"
}

rc=0
for name in kueue kube-scheduler kwok kube-controller-manager kube-apiserver etcd; do
    pid=$(ours "$dir/run/$name.pid") || continue
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < 50; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null
        sleep 0.2
    fi
    if kill -0 "$pid" 2>/dev/null && ours "$dir/run/$name.pid" >/dev/null; then
        echo "down.sh: $name ($pid) is still running" >&2
        rc=1
    fi
    rm -f "$dir/run/$name.pid"
done
[ "$keep" = --keep ] || [ "$rc" != 0 ] || rm -rf "$dir"
exit $rc
