#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# slurm-up.sh DIR [NODES] [GPUS_PER_NODE] [GPU_TYPE]: stands up a real Slurm
# (Debian's slurm-wlm 22.05) on 127.0.0.1 for tests: one slurmctld and NODES
# (default 4) slurmd, each `slurmd -D -N nodeK` with its own port, every node
# with GPUS_PER_NODE (default 8) fake GPUs of GRES type GPU_TYPE (default
# h100). Everything lives in DIR (created; must be empty or absent): configs,
# state, spool, logs, pid files, fake device files, the job-completion file.
# Prints nothing on success; DIR/env then holds `SLURM_CONF=DIR/slurm.conf`
# for the client commands (sbatch, squeue, ...). slurm-down.sh DIR stops it.
#
# SLURM_WITH_DBD=1: accounting too, as real clusters keep it: a MariaDB of
# its own (DIR/db, reached only through DIR/run/mysql.sock) under a slurmdbd
# on 127.0.0.1 (DIR/slurmdbd.conf), the cluster registered with sacctmgr,
# AccountingStorageType=accounting_storage/slurmdbd and JobCompType=
# jobcomp/none (sacct is then the only record of finished jobs). Needs
# Debian's slurmdbd and mariadb-server (installed when missing); costs about
# a second more.
#
# Facts this relies on (issue 8):
#  - Slurm picks a daemon's role from basename(argv[0]); started as
#    slurmctld-wlm (Debian's real file name) it silently drops every Gres=
#    line, so the daemons are started through links named exactly slurmctld,
#    slurmd and slurmstepd in DIR/bin;
#  - fake GPUs are character devices (mknod c 1 3, i.e. /dev/null) named in
#    gres.conf's File=; Slurm then hands out indices and sets
#    CUDA_VISIBLE_DEVICES per job;
#  - without slurmdbd, finished jobs are recorded by jobcomp/filetxt;
#  - slurmdbd reads slurmdbd.conf (mode 0600) next to SLURM_CONF and has no
#    option for the database's socket: MariaDB's client library takes it
#    from MYSQL_UNIX_PORT;
#  - auth/none (no munge daemon to run); per-node spool directories must exist
#    before slurmd starts; batch_sched_delay=0 for a fast submit -> start.
# Test use only: auth/none trusts whoever talks to the ports.
set -euo pipefail

me=slurm-up.sh
die() {
    echo "$me: $*" >&2
    exit 1
}

dir=${1:-}
nodes=${2:-4}
gpus=${3:-8}
gtype=${4:-h100}
[ -n "$dir" ] || die "usage: $me DIR [NODES] [GPUS_PER_NODE] [GPU_TYPE]"
[[ $nodes =~ ^[0-9]+$ ]] && [ "$nodes" -ge 1 ] && [ "$nodes" -le 64 ] ||
    die "NODES must be 1 to 64, not '$nodes'"
[[ $gpus =~ ^[0-9]+$ ]] && [ "$gpus" -ge 1 ] && [ "$gpus" -le 64 ] ||
    die "GPUS_PER_NODE must be 1 to 64, not '$gpus'"
[[ $gtype =~ ^[a-z0-9]+$ ]] || die "GPU_TYPE must be lower-case letters and digits"
[ "$(id -u)" = 0 ] || die "a test Slurm needs root (slurmd runs jobs as their users)"

here=$(cd "$(dirname "$0")" && pwd)

# Packages: slurm-wlm (never slurm-wlm-emulator: it repoints the system's
# binaries to a build that does not work), installed only when missing.
sbin=/usr/sbin
if [ ! -x "$sbin/slurmctld-wlm" ] || ! command -v sbatch >/dev/null 2>&1; then
    echo "$me: installing slurm-wlm" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends slurm-wlm >/dev/null
fi
for f in slurmctld slurmd slurmstepd; do
    [ -x "$sbin/$f-wlm" ] || die "$sbin/$f-wlm is missing (is slurm-wlm installed?)"
done
dbd=${SLURM_WITH_DBD:-0}
if [ "$dbd" = 1 ]; then
    if [ ! -x "$sbin/slurmdbd" ] || [ ! -x "$sbin/mariadbd" ]; then
        echo "$me: installing slurmdbd mariadb-server" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null
        apt-get install -y -qq --no-install-recommends slurmdbd mariadb-server >/dev/null
    fi
    for f in slurmdbd mariadbd; do
        [ -x "$sbin/$f" ] || die "$sbin/$f is missing (are slurmdbd and mariadb-server installed?)"
    done
fi

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
[ -z "$(ls -A "$dir")" ] || die "'$dir' is not empty"
mkdir -p "$dir"/{bin,dev,state,log,run,spool}
for f in slurmctld slurmd slurmstepd; do
    ln -s "$sbin/$f-wlm" "$dir/bin/$f"
done
if [ "$dbd" = 1 ]; then
    # Started through DIR/bin too, so that slurm-down.sh knows them as DIR's.
    ln -s "$sbin/slurmdbd" "$dir/bin/slurmdbd"
    ln -s "$sbin/mariadbd" "$dir/bin/mariadbd"
fi
last=$((gpus - 1))
for ((i = 0; i < gpus; i++)); do
    mknod "$dir/dev/nvidia$i" c 1 3
done
for ((k = 1; k <= nodes; k++)); do
    mkdir -p "$dir/spool/node$k"
done

# Ports: NODES + 1 consecutive free ones from a random base below the
# kernel's ephemeral range (a port some outgoing connection holds is not
# seen by a connect test, and would make a daemon's bind fail). Another run
# may take one between this check and the daemon's bind: then the wait
# below fails and the caller may retry.
eph_low=32768
read -r eph_low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
n_ports=$((nodes + 1 + (dbd == 1)))
top=$((eph_low - n_ports - 1))
[ "$top" -gt 12000 ] || top=60000
port_free() {
    if command -v ss >/dev/null 2>&1; then
        [ -z "$(ss -Hant "( sport = :$1 or dport = :$1 )" 2>/dev/null)" ]
    else
        ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
    fi
}
ctld_port=
for _ in $(seq 1 50); do
    base=$((10000 + RANDOM % (top - 10000)))
    ok=1
    for ((p = base; p < base + n_ports; p++)); do
        port_free "$p" || {
            ok=0
            break
        }
    done
    if [ "$ok" = 1 ]; then
        ctld_port=$base
        break
    fi
done
[ -n "$ctld_port" ] || die "no $n_ports free ports found"
dbd_port=$((ctld_port + nodes + 1))

# A cluster name of its own, so that parallel test clusters never mix.
cname="gpuaas$(printf '%05d' $((RANDOM % 100000)))"
cpus=8
mem=65536
{
    cat <<EOF
# Written by $me: a throwaway test cluster on 127.0.0.1.
ClusterName=$cname
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
EOF
    if [ "$dbd" = 1 ]; then
        cat <<EOF
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$dbd_port
JobCompType=jobcomp/none
EOF
    else
        cat <<EOF
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.txt
EOF
    fi
    cat <<EOF
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
PreemptType=preempt/none
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=0
MinJobAge=600
InactiveLimit=0
SlurmdTimeout=300
MessageTimeout=10
EOF
    for ((k = 1; k <= nodes; k++)); do
        echo "NodeName=node$k NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((ctld_port + k)) CPUs=$cpus RealMemory=$mem Gres=gpu:$gtype:$gpus State=UNKNOWN"
    done
    echo "PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"
} >"$dir/slurm.conf"
echo "NodeName=node[1-$nodes] Name=gpu Type=$gtype File=$dir/dev/nvidia[0-$last]" >"$dir/gres.conf"
cat >"$dir/cgroup.conf" <<EOF
# Nothing is constrained: the test machine may not delegate cgroups.
CgroupAutomount=no
ConstrainCores=no
ConstrainDevices=no
ConstrainRAMSpace=no
EOF
echo "SLURM_CONF=$dir/slurm.conf" >"$dir/env"
echo "$nodes" >"$dir/nodes"

export SLURM_CONF=$dir/slurm.conf
fail() {
    echo "$me: $*" >&2
    sinfo -N -o '%N %T %E' >&2 2>/dev/null || true
    tail -n 20 "$dir"/log/* >&2 2>/dev/null || true
    "$here/slurm-down.sh" "$dir" || true
    exit 1
}

# Daemons (and the slurmstepd of every job, which inherit it) run in DIR:
# that is how slurm-down.sh finds jobs still running.
cd "$dir"
if [ "$dbd" = 1 ]; then
    # MariaDB as root on a private data directory, without networking: root
    # logs in through the socket (unix_socket authentication).
    mkdir -p "$dir/db"
    mariadb-install-db --no-defaults --user=root --datadir="$dir/db" --skip-test-db \
        --auth-root-authentication-method=socket >"$dir/log/mariadb-install.out" 2>&1 ||
        fail "mariadb-install-db failed"
    setsid "$dir/bin/mariadbd" --no-defaults --user=root --datadir="$dir/db" \
        --socket="$dir/run/mysql.sock" --skip-networking --pid-file="$dir/run/mariadbd.pid" \
        --log-error="$dir/log/mariadbd.log" --innodb-buffer-pool-size=16M \
        </dev/null >"$dir/log/mariadbd.out" 2>&1 &
    echo $! >"$dir/run/mariadbd.launcher"
    deadline=$((SECONDS + 30))
    until mariadb --no-defaults --socket="$dir/run/mysql.sock" -e 'select 1' >/dev/null 2>&1; do
        [ "$SECONDS" -lt "$deadline" ] || fail "mariadbd not ready after 30 s"
        sleep 0.05
    done
    cat >"$dir/slurmdbd.conf" <<EOF
# Written by $me: the test cluster's accounting.
AuthType=auth/none
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$dbd_port
SlurmUser=root
LogFile=$dir/log/slurmdbd.log
PidFile=$dir/run/slurmdbd.pid
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=root
StorageLoc=slurm_acct_db
EOF
    chmod 600 "$dir/slurmdbd.conf"
    MYSQL_UNIX_PORT=$dir/run/mysql.sock setsid "$dir/bin/slurmdbd" -D \
        </dev/null >"$dir/log/slurmdbd.out" 2>&1 &
    echo $! >"$dir/run/slurmdbd.launcher"
    deadline=$((SECONDS + 30))
    until sacctmgr -n list cluster >/dev/null 2>&1; do
        [ "$SECONDS" -lt "$deadline" ] || fail "slurmdbd not answering after 30 s"
        sleep 0.1
    done
    sacctmgr -i add cluster "$cname" >"$dir/log/sacctmgr.out" 2>&1 ||
        fail "sacctmgr could not add cluster $cname"
fi
# -i: ignore saved state (there is none); daemons fork into the background
# unless -D; slurmd stays in the foreground (-D) so that each is one process.
"$dir/bin/slurmctld" -i -f "$dir/slurm.conf" >"$dir/log/slurmctld.out" 2>&1 ||
    fail "slurmctld did not start"
for ((k = 1; k <= nodes; k++)); do
    setsid "$dir/bin/slurmd" -D -N "node$k" -f "$dir/slurm.conf" \
        </dev/null >"$dir/log/slurmd-node$k.out" 2>&1 &
    echo $! >"$dir/run/slurmd-node$k.launcher"
done

# Ready when every node is idle (polled, not slept).
deadline=$((SECONDS + 30))
while :; do
    n_idle=$(sinfo -h -N -t idle -o '%N' 2>/dev/null | sort -u | wc -l) || n_idle=0
    [ "$n_idle" -ge "$nodes" ] && break
    [ "$SECONDS" -lt "$deadline" ] || fail "nodes not idle after 30 s ($n_idle of $nodes)"
    sleep 0.05
done
