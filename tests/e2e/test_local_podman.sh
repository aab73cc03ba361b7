#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The local backend with a real podman (docs/local-backend.md, "Containers"):
# work naming an image runs in a container of an image built here from the
# static busybox (no registry is needed), sees exactly its allocated devices
# (through a CDI spec made for the test's declared GPUs), gets the flavor's
# memory and CPU limits, writes its output to the workload's log and reports
# its exit code; a cancel reaches the container's SIGTERM trap within the
# grace, SIGTERM ends a command that does not trap it, one that ignores it is
# killed at the grace end, and no container is left behind.
#
# Skips (77) unless run as root with podman and a static busybox, and podman
# can start a container on this machine at all.
set -euo pipefail

skip() {
  echo "SKIP: $*" >&2
  [ -z "${TMP:-}" ] || rm -rf "$TMP"
  exit 77
}

[ "$(id -u)" -eq 0 ] || skip "needs root (gpuaas runs podman as the daemon's user; rootless podman is not set up here)"
PODMAN=$(command -v podman) || skip "podman is not installed (scripts/deps.sh installs it)"
BUSYBOX=$(command -v busybox || true)
[ -n "$BUSYBOX" ] || skip "busybox is not installed (busybox-static, to build the test image)"
if ldd "$BUSYBOX" >/dev/null 2>&1; then
  skip "$BUSYBOX is linked dynamically; the test image needs busybox-static"
fi

. "$(dirname "$0")/lib.sh"

# Container names are gpuaas-<daemon>-<workload id>-<replica>, but this test
# finds them by id, and every test daemon's ids start at 1: test runs of two
# build trees take turns.
exec 9>/tmp/gpuaas-e2e-podman.lock
flock -w 600 9 || fail "another podman test held /tmp/gpuaas-e2e-podman.lock for 10 minutes"

IMAGE=localhost/gpuaas-test:$$
CDI_SPEC=/var/run/cdi/gpuaas-e2e-$$.json
GPU0=GPU-e2e-$$-0
GPU1=GPU-e2e-$$-1

podman_cleanup() {
  rm -f "$CDI_SPEC"
  "$PODMAN" ps -aq --filter "ancestor=$IMAGE" 2>/dev/null | xargs -r "$PODMAN" rm -f >/dev/null 2>&1 ||
    true
  "$PODMAN" rmi -f "$IMAGE" >/dev/null 2>&1 || true
}
# (lib.sh's cleanup reads the exit status from $?; set -e would end the trap at "exit $rc")
trap 'rc=$?; podman_cleanup; set +e; (exit $rc); cleanup' EXIT

# The image: busybox and its applets, and a file naming this run.
mkdir -p "$TMP/rootfs/bin"
cp "$BUSYBOX" "$TMP/rootfs/bin/busybox"
for applet in $("$BUSYBOX" --list); do
  [ "$applet" = busybox ] || ln -s busybox "$TMP/rootfs/bin/$applet"
done
echo "gpuaas-test-image $$" >"$TMP/rootfs/marker"
tar -C "$TMP/rootfs" -c . | "$PODMAN" import - "$IMAGE" >"$TMP/import.out" 2>&1 ||
  skip "podman cannot import an image here: $(tail -3 "$TMP/import.out")"

# Can podman run a container here at all, with what gpuaas asks of it (an
# init; this process's hard open-file and process limits, the latter at most
# pid_max)? crun refuses hybrid cgroup hierarchies that have a controller on
# the v2 side (as this project's test machines have): runc is tried then,
# through a wrapper given to the daemon as its podman program.
nofile=$(ulimit -Hn)
nproc=$(ulimit -Hu)
pid_max=$(cat /proc/sys/kernel/pid_max)
if [ "$nproc" = unlimited ] || [ "$nproc" -gt "$pid_max" ]; then nproc=$pid_max; fi
probe() {
  "$@" run --rm --init "--ulimit=nofile=$nofile:$nofile" "--ulimit=nproc=$nproc:$nproc" \
    "$IMAGE" /bin/sh -c 'cat /marker' 2>&1
}
PROGRAM=$PODMAN
if ! out=$(probe "$PODMAN") || [ "$out" != "gpuaas-test-image $$" ]; then
  if command -v runc >/dev/null && out2=$(probe "$PODMAN" --runtime=runc) &&
    [ "$out2" = "gpuaas-test-image $$" ]; then
    echo "podman's default runtime cannot start a container here ($out); using runc" >&2
    PROGRAM=$TMP/podman-runc
    printf '#!/bin/sh\nexec %s --runtime=runc "$@"\n' "$PODMAN" >"$PROGRAM"
    chmod 755 "$PROGRAM"
  else
    skip "podman cannot start a container here: $out ${out2:-}"
  fi
fi

# CDI devices for the declared GPUs: each sets a variable naming itself.
mkdir -p /var/run/cdi
cat >"$CDI_SPEC" <<EOF
{"cdiVersion": "0.3.0", "kind": "nvidia.com/gpu", "devices": [
  {"name": "$GPU0", "containerEdits": {"env": ["GPUAAS_CDI_0=$GPU0"]}},
  {"name": "$GPU1", "containerEdits": {"env": ["GPUAAS_CDI_1=$GPU1"]}}]}
EOF

# (without the lock: a daemon that outlived the test would hold it)
start_daemon "$TMP/gpuaas.db" --log-dir "$TMP/logs" --podman "$PROGRAM" 9>&-
g=("$GPUAAS" --server "$URL" --token "$ADMIN_TOKEN")
"${g[@]}" cluster create here --backend local >/dev/null
"${g[@]}" gpu-class create h100 >/dev/null
"${g[@]}" node create this-host --cluster here --cpu-milli 8000 --memory-mib 8192 >/dev/null
"${g[@]}" gpu create --node this-host --index 0 --gpu-class h100 --uuid "$GPU0" >/dev/null
"${g[@]}" gpu create --node this-host --index 1 --gpu-class h100 --uuid "$GPU1" >/dev/null
"${g[@]}" flavor create h100.1x --gpu-class h100 --gpu-milli 1000 --vcpus 1 --memory-mib 96 >/dev/null
"${g[@]}" org create acme >/dev/null
"${g[@]}" project create ml --org acme >/dev/null
"${g[@]}" quota create --project ml --gpu-class h100 --limit-milli 2000 >/dev/null

# runs [run flags] -- COMMAND...: submits a workload of the test image, prints its id.
runs() {
  "${g[@]}" -o json run --project ml --flavor h100.1x --image "$IMAGE" "$@" | jq -r .id
}

# log_wait ID TEXT [seconds]: waits until the workload's log holds TEXT.
log_wait() {
  local deadline=$((SECONDS + ${3:-20}))
  until "${g[@]}" logs "$1" 2>/dev/null | grep -qF -- "$2"; do
    [ $SECONDS -lt $deadline ] || fail "workload $1: no '$2' in its log: $("${g[@]}" logs "$1" 2>&1)"
    sleep 0.1
  done
}

# container_gone ID [seconds]: waits until podman has no container of workload ID's replica 0.
container_gone() {
  local deadline=$((SECONDS + ${2:-20}))
  while "$PODMAN" ps -a --format '{{.Names}}' | grep -qxE "gpuaas-[0-9a-f]{8}-$1-0"; do
    [ $SECONDS -lt $deadline ] || fail "container $1 is still there: $("$PODMAN" ps -a)"
    sleep 0.2
  done
}

# 1. Output, exit code, devices, limits: all read inside the container.
# shellcheck disable=SC2016 # expanded there
w=$(runs -- sh -c '
  echo "image=$(cat /marker)"
  echo "cuda=$CUDA_VISIBLE_DEVICES nvidia=$NVIDIA_VISIBLE_DEVICES cdi=${GPUAAS_CDI_0:-}${GPUAAS_CDI_1:-}"
  echo "id=$GPUAAS_WORKLOAD_ID replica=$GPUAAS_REPLICA"
  echo "mem=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max)"
  echo "cpu=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null || cut -d" " -f1 /sys/fs/cgroup/cpu.max)"
  echo "nofile=$(ulimit -n)"
  echo oops >&2
  exit 5')
wait_state "$w" failed 30
api GET "/v1/workloads/$w" "$ADMIN_TOKEN"
expect_eq "$(jq -r .exit_code <<<"$BODY")" 5 "exit code of the container's command"
api GET "/v1/allocations?workload_id=$w" "$ADMIN_TOKEN"
gpu_id=$(jq -r '(.items // .)[0].gpu_id' <<<"$BODY")
api GET "/v1/gpus/$gpu_id" "$ADMIN_TOKEN"
allocated=$(jq -r .uuid <<<"$BODY")
case "$allocated" in "$GPU0" | "$GPU1") ;; *) fail "allocation $gpu_id is not a declared GPU: $BODY" ;; esac
logs=$("${g[@]}" logs "$w")
expect_contains "$logs" "image=gpuaas-test-image $$" "ran in the test image"
expect_contains "$logs" "cuda=$allocated nvidia=$allocated cdi=$allocated" \
  "the container saw exactly its allocated device (variables and CDI device)"
expect_contains "$logs" "id=$w replica=0" "workload variables"
expect_contains "$logs" "mem=$((96 * 1024 * 1024))" "the flavor's memory limit"
expect_contains "$logs" "cpu=100000" "the flavor's CPU limit (1 vCPU: 100000 us per 100000 us)"
expect_contains "$logs" "nofile=$nofile" "the daemon's open-file limit"
expect_contains "$logs" "oops" "stderr captured"
container_gone "$w"

# 2. A cancel reaches the command's SIGTERM trap, well within the grace.
t=$(runs --grace 20s -- sh -c \
  'trap "echo got-term; exit 0" TERM; echo started; while :; do sleep 0.1; done')
log_wait "$t" started
start=$SECONDS
"${g[@]}" cancel "$t" >/dev/null
wait_state "$t" cancelled 30
[ $((SECONDS - start)) -lt 15 ] || fail "the trap did not end the work within the grace"
log_wait "$t" got-term 1
api GET "/v1/workloads/$t" "$ADMIN_TOKEN"
expect_eq "$(jq -r .exit_code <<<"$BODY")" 0 "exit code of the trap"
container_gone "$t"

# 3. SIGTERM ends a command that does not trap it (the container's init
# passes it on; a shell as PID 1 would ignore it): 128 + 15 from podman.
n=$(runs --grace 20s -- sh -c 'echo started; sleep 600')
log_wait "$n" started
start=$SECONDS
"${g[@]}" cancel "$n" >/dev/null
wait_state "$n" cancelled 30
[ $((SECONDS - start)) -lt 15 ] || fail "SIGTERM did not end an untrapping command before the grace"
api GET "/v1/workloads/$n" "$ADMIN_TOKEN"
expect_eq "$(jq -r .exit_code <<<"$BODY")" 143 "exit code of a command ended by SIGTERM"
container_gone "$n"

# 4. A command that ignores SIGTERM is killed at the grace end, container and all.
k=$(runs --grace 2s -- sh -c "trap '' TERM; echo started; while :; do sleep 0.1; done")
log_wait "$k" started
start=$SECONDS
"${g[@]}" cancel "$k" >/dev/null
wait_state "$k" cancelled 30
[ $((SECONDS - start)) -ge 2 ] || fail "ended before its grace"
api GET "/v1/workloads/$k" "$ADMIN_TOKEN"
expect_eq "$(jq -r .exit_code <<<"$BODY")" -9 "exit code of work killed at the grace end"
container_gone "$k"

stop_daemon
left=$("$PODMAN" ps -a --filter "ancestor=$IMAGE" --format '{{.Names}}')
[ -z "$left" ] || fail "containers left behind: $left"
echo "local_podman: ok"
