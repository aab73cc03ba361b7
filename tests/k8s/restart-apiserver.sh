#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# restart-apiserver.sh DIR [DOWN-SECONDS]: stops the kube-apiserver that
# up.sh started in DIR (SIGTERM, as an upgrade or a crash-looping pod
# would), keeps it down DOWN-SECONDS (default 0), starts it again with the
# same command line and waits until it is ready. Clients see their watches
# and connections end; etcd keeps every object, so resourceVersions go on.
set -euo pipefail

dir=$(cd "${1:?usage: restart-apiserver.sh DIR [DOWN-SECONDS]}" && pwd)
down_s=${2:-0}
pidf=$dir/run/kube-apiserver.pid
pid=$(tr -dc '0-9' <"$pidf")
mapfile -d '' argv <"/proc/$pid/cmdline"
[ "${argv[0]}" = "$dir/bin/kube-apiserver" ] || {
    echo "restart-apiserver.sh: pid $pid is not $dir's kube-apiserver" >&2
    exit 1
}
kill -TERM "$pid"
for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
sleep "$down_s"
setsid "${argv[@]}" </dev/null >>"$dir/log/kube-apiserver.log" 2>&1 &
echo $! >"$pidf"
. "$dir/env"
for ((i = 0; i < 600; i++)); do
    [ "$(curl -sS --cacert "$K8S_CA" -H "Authorization: Bearer $K8S_TOKEN" "$K8S_SERVER/readyz" 2>/dev/null)" = ok ] && exit 0
    sleep 0.1
done
echo "restart-apiserver.sh: kube-apiserver not ready 60 s after its restart" >&2
exit 1
