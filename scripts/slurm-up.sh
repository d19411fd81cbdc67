#!/usr/bin/env bash
# Start a single-node Slurm on this machine, as root, without systemd: munged,
# slurmctld and slurmd in the foreground of background shells, their pids in
# $HATECHECK_SLURM_DIR/pids (scripts/slurm-down.sh stops exactly those).
#
# Everything lives in one state directory (default /tmp/hatecheck-slurm):
# slurm.conf (localhost, the machine's real CPUs and memory from `slurmd -C`,
# GPUs from /dev/nvidia* as gres/gpu), a private munge socket, spool, logs and
# jobcomp.log (one line per finished job: id, name, state). Job status for
# Snakemake's Slurm executor comes from `squeue` (no accounting database):
# MinJobAge keeps finished jobs visible to squeue for 10 minutes.
#
# Clients find the cluster through /etc/slurm/slurm.conf, a link to that file
# (refused where a site's own slurm.conf is there), or SLURM_CONF.
# Usage:  sudo bash scripts/slurm-up.sh   ...   sudo bash scripts/slurm-down.sh
set -euo pipefail

DIR=${HATECHECK_SLURM_DIR:-/tmp/hatecheck-slurm}
CTLD_PORT=${HATECHECK_SLURM_PORT:-6817}
SLURMD_PORT=$((CTLD_PORT + 1))
WAIT_S=${HATECHECK_SLURM_WAIT_S:-30}

die() { echo "slurm-up: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (it starts munged, slurmctld and slurmd)"

if [ -s "$DIR/pids" ]; then
    for pid in $(cut -d' ' -f2 "$DIR/pids"); do
        kill -0 "$pid" 2>/dev/null && die "a Slurm started by this script is already running (pids in $DIR/pids); stop it with scripts/slurm-down.sh"
    done
fi

# Debian packages (bookworm: Slurm 22.05); installed only when missing.
missing=()
for bin in munged:munge slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client; do
    command -v "${bin%%:*}" >/dev/null 2>&1 || [ -x "/usr/sbin/${bin%%:*}" ] || missing+=("${bin##*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "slurm-up: installing ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
PATH=/usr/sbin:$PATH

# Start from a clean state directory: only an empty one or one this script wrote.
if [ -d "$DIR" ] && [ -n "$(ls -A "$DIR")" ]; then
    grep -qs 'written by scripts/slurm-up.sh' "$DIR/slurm.conf" || die "$DIR is not empty and not a state directory of this script; choose another HATECHECK_SLURM_DIR"
    rm -rf "$DIR"
fi
mkdir -p "$DIR"/{munge,ctld,spool,log}
chmod 755 "$DIR"

# munge: the Debian package creates /etc/munge/munge.key; make one if absent.
KEY=/etc/munge/munge.key
if [ ! -s "$KEY" ]; then
    mkdir -p /etc/munge
    if command -v mungekey >/dev/null 2>&1; then mungekey --create --keyfile="$KEY" --force; else dd if=/dev/urandom of="$KEY" bs=1 count=1024 status=none; fi
    chmod 600 "$KEY"
fi
chown munge:munge "$KEY" "$DIR/munge" 2>/dev/null || true

# The machine's real CPUs and memory, as slurmd sees them.
read -r CPUS SOCKETS CORES THREADS MEM < <(slurmd -C | head -1 | tr ' ' '\n' | awk -F= '
    $1=="CPUs"{c=$2} $1=="SocketsPerBoard"{s=$2} $1=="CoresPerSocket"{k=$2}
    $1=="ThreadsPerCore"{t=$2} $1=="RealMemory"{m=$2} END{print c, s, k, t, m}')
[ -n "$CPUS" ] && [ -n "$MEM" ] || die "could not read CPUs and memory from 'slurmd -C'"

GRES_NODE="" GRES_TYPES=""
GPUS=$(compgen -G "/dev/nvidia[0-9]*" | wc -l || true)
if [ "$GPUS" -gt 0 ]; then
    GRES_TYPES="GresTypes=gpu"
    GRES_NODE="Gres=gpu:$GPUS"
    echo "Name=gpu File=/dev/nvidia[0-$((GPUS - 1))]" > "$DIR/gres.conf"
fi

cat > "$DIR/slurm.conf" <<EOF
# Single-node Slurm written by scripts/slurm-up.sh (hatecheck-pipeline).
ClusterName=hatecheck
SlurmctldHost=localhost
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket.2
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$DIR/ctld
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
# No systemd/cgroups here: track job processes through /proc.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
# A job that names no memory gets 1 GB per CPU (not the whole node).
DefMemPerCPU=1000
# No accounting database: Snakemake's executor reads job states with squeue,
# which sees a finished job for MinJobAge seconds; jobcomp.log keeps a line
# per finished job (id, name, state) for the record.
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/jobcomp.log
MinJobAge=600
SlurmdTimeout=60
$GRES_TYPES
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$CPUS SocketsPerBoard=$SOCKETS CoresPerSocket=$CORES ThreadsPerCore=$THREADS RealMemory=$MEM $GRES_NODE State=UNKNOWN
PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$DIR/slurm.conf
# Clients also find it at the default path: Snakemake's job step strips
# SLURM_* variables (SLURM_CONF included) before its `srun` inside the job.
ETC_CONF=/etc/slurm/slurm.conf
if [ -L "$ETC_CONF" ]; then
    other=$(dirname "$(readlink "$ETC_CONF")")
    if [ "$other" != "$DIR" ] && [ -s "$other/pids" ]; then
        for pid in $(cut -d' ' -f2 "$other/pids"); do
            kill -0 "$pid" 2>/dev/null && die "$ETC_CONF points to another running single-node Slurm ($other); stop it first (HATECHECK_SLURM_DIR=$other scripts/slurm-down.sh)"
        done
    fi
elif [ -e "$ETC_CONF" ]; then
    die "$ETC_CONF exists (a site configuration): this script only starts a Slurm on a machine without one"
fi
mkdir -p /etc/slurm
ln -sfn "$SLURM_CONF" "$ETC_CONF"

: > "$DIR/pids"
start() {  # name, command...: run in the foreground of a background shell, record its pid
    local name=$1; shift
    "$@" > "$DIR/log/$name.out" 2>&1 &
    echo "$name $!" >> "$DIR/pids"
}
start munged runuser -u munge -- /usr/sbin/munged --foreground --force \
    --socket="$DIR/munge/munge.socket.2" --key-file="$KEY" \
    --pid-file="$DIR/munge/munged.pid" --seed-file="$DIR/munge/munged.seed" \
    --log-file="$DIR/munge/munged.log"
for _ in $(seq 50); do [ -S "$DIR/munge/munge.socket.2" ] && break; sleep 0.1; done
[ -S "$DIR/munge/munge.socket.2" ] || die "munged did not start: $(cat "$DIR/log/munged.out" "$DIR/munge/munged.log" 2>/dev/null)"
start slurmctld slurmctld -D -i -f "$SLURM_CONF"
start slurmd slurmd -D -N localhost -f "$SLURM_CONF"

# Wait until the node is idle (or give up after WAIT_S seconds, naming the logs).
deadline=$((SECONDS + WAIT_S))
until sinfo -h -N -o '%T' 2>/dev/null | grep -qx idle; do
    if [ $SECONDS -ge $deadline ]; then
        echo "slurm-up: the node is not idle after ${WAIT_S}s; logs in $DIR/log:" >&2
        tail -n 20 "$DIR"/log/*.log "$DIR"/log/*.out >&2 || true
        bash "$(dirname "$0")/slurm-down.sh" || true
        exit 1
    fi
    sleep 0.5
done
sinfo
echo "slurm-up: single-node Slurm running ($CPUS CPUs, $MEM MB, $GPUS GPU(s)); pids in $DIR/pids"
echo "export SLURM_CONF=$SLURM_CONF"
