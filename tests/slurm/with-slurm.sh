#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# with-slurm.sh NODES COMMAND [ARG...]: runs COMMAND against a throwaway
# Slurm (slurm-up.sh) of NODES nodes with 8 fake h100 GPUs each, with
# SLURM_TEST_DIR and SLURM_CONF set, and stops every daemon and job of it
# afterwards, whatever happens (trap). Exits with COMMAND's status; 77 (the
# ctest skip code) when not root, since slurmd must run as root.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
nodes=${1:?usage: with-slurm.sh NODES COMMAND [ARG...]}
shift
if [ "$(id -u)" != 0 ]; then
    echo "with-slurm.sh: skipped: a test Slurm needs root" >&2
    exit 77
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/gpuaas-slurm.XXXXXX")
cleanup() {
    local rc=$?
    if [ "$rc" != 0 ] && [ -d "$dir/log" ]; then
        echo "with-slurm.sh: command failed ($rc); the end of the Slurm logs:" >&2
        tail -n 15 "$dir"/log/slurmctld.log >&2 2>/dev/null
    fi
    "$here/slurm-down.sh" "$dir"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A port taken between the check and the bind fails the start: try again.
ok=0
for attempt in 1 2 3; do
    rm -rf "$dir" && mkdir -p "$dir"
    if "$here/slurm-up.sh" "$dir" "$nodes" 8 h100; then
        ok=1
        break
    fi
    echo "with-slurm.sh: slurm-up.sh failed (attempt $attempt)" >&2
done
[ "$ok" = 1 ] || exit 1

export SLURM_TEST_DIR=$dir SLURM_CONF=$dir/slurm.conf
"$@"
