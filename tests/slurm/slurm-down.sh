#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# slurm-down.sh DIR [--keep]: stops the test Slurm that slurm-up.sh started
# in DIR (slurmctld, every slurmd, slurmdbd and MariaDB when there, and
# whatever jobs still run there) and
# removes DIR unless --keep. Safe to run twice, or on a half-started DIR.
# Only processes named by DIR's pid files are signalled, each checked to be
# a Slurm daemon started from DIR/bin first.
set -uo pipefail

dir=${1:-}
keep=${2:-}
[ -n "$dir" ] || {
    echo "usage: slurm-down.sh DIR [--keep]" >&2
    exit 1
}
[ -d "$dir" ] || exit 0
dir=$(cd "$dir" && pwd)

# The pid in file $1 if it is still one of DIR's daemons.
ours() {
    local pid exe
    [ -f "$1" ] || return 1
    pid=$(tr -dc '0-9' <"$1")
    [ -n "$pid" ] || return 1
    exe=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || return 1
    case "$exe" in
    "$dir/bin/"*) echo "$pid" ;;
    *) return 1 ;;
    esac
}

pids=()
for f in "$dir"/run/slurmd-*.launcher "$dir"/run/slurmctld.pid "$dir"/run/slurmdbd.launcher \
    "$dir"/run/mariadbd.launcher; do
    pid=$(ours "$f") && pids+=("$pid")
done
# Jobs still running: slurmd starts each job's slurmstepd in a session of its
# own, with slurmd's working directory (slurm-up.sh starts them in DIR); the
# job's processes stay in that session. Everything in those sessions goes.
sids=()
jobs=()
for p in /proc/[0-9]*; do
    [ "$(cat "$p/comm" 2>/dev/null)" = slurmstepd ] || continue
    [ "$(readlink "$p/cwd" 2>/dev/null)" = "$dir" ] || continue
    sid=$(awk '{print $6}' "$p/stat" 2>/dev/null) && [ -n "$sid" ] && sids+=("$sid")
done
if [ ${#sids[@]} -gt 0 ]; then
    for p in /proc/[0-9]*; do
        sid=$(sed -E 's/^.*\) //' "$p/stat" 2>/dev/null | awk '{print $4}') || continue
        for s in "${sids[@]}"; do
            [ "$sid" = "$s" ] && jobs+=("${p#/proc/}")
        done
    done
fi
# And processes a job left behind that outlived their slurmstepd (with
# proctrack/linuxproc, a child whose parent died escapes Slurm's kill): found
# by this cluster's name in their environment, which Slurm sets for every job.
cname=$(sed -n 's/^ClusterName=//p' "$dir/slurm.conf" 2>/dev/null)
if [ -n "$cname" ]; then
    for p in /proc/[0-9]*; do
        { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qx "SLURM_CLUSTER_NAME=$cname" &&
            jobs+=("${p#/proc/}")
    done
fi

# Jobs are killed outright (one trapping SIGTERM must not slow teardown
# down); the daemons get SIGTERM, then SIGKILL after 5 s.
[ ${#jobs[@]} -eq 0 ] || kill -KILL "${jobs[@]}" 2>/dev/null
if [ ${#pids[@]} -gt 0 ]; then
    kill -TERM "${pids[@]}" 2>/dev/null
    for _ in $(seq 1 100); do
        alive=0
        for pid in "${pids[@]}"; do
            kill -0 "$pid" 2>/dev/null && alive=1
        done
        [ "$alive" = 0 ] && break
        sleep 0.05
    done
    kill -KILL "${pids[@]}" 2>/dev/null
fi

if [ "$keep" != "--keep" ]; then
    rm -rf "$dir"
fi
exit 0
