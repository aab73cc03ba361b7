#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# pg-stop.sh STATE_DIR: stops the server pg-start.sh started with that state
# directory and removes its cluster directory and state files.
set -euo pipefail

state=${1:?usage: pg-stop.sh STATE_DIR}
[ -f "$state/root" ] || exit 0
root=$(cat "$state/root")
bin=$(cat "$state/bin" 2>/dev/null || true)

if [ -n "$bin" ] && [ -f "$root/data/postmaster.pid" ]; then
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$bin/pg_ctl" -D "$root/data" -m immediate -w stop >/dev/null || true
    else
        "$bin/pg_ctl" -D "$root/data" -m immediate -w stop >/dev/null || true
    fi
fi
# Only ever remove what pg-start.sh made.
case "$root" in
*/gpuaas-pg.*) rm -rf "$root" ;;
esac
rm -f "$state/url" "$state/root" "$state/bin"
