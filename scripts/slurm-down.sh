#!/usr/bin/env bash
# Stop the single-node Slurm that scripts/slurm-up.sh started: cancel its
# jobs, then stop exactly the daemons whose pids it recorded in
# $HATECHECK_SLURM_DIR/pids (TERM, then KILL after a grace period), and
# remove the /etc/slurm/slurm.conf link to its configuration.
set -uo pipefail

DIR=${HATECHECK_SLURM_DIR:-/tmp/hatecheck-slurm}
GRACE_S=${HATECHECK_SLURM_GRACE_S:-10}
PATH=/usr/sbin:$PATH

if [ ! -s "$DIR/pids" ]; then
    echo "slurm-down: nothing to stop (no $DIR/pids)"
    exit 0
fi

alive() { kill -0 "$1" 2>/dev/null; }

# Cancel the jobs of this cluster while slurmctld still runs, and give their
# steps a moment to end.
if [ -f "$DIR/slurm.conf" ]; then
    export SLURM_CONF=$DIR/slurm.conf
    jobs=$(timeout 10 squeue -h -o %i 2>/dev/null || true)
    if [ -n "$jobs" ]; then
        # shellcheck disable=SC2086
        timeout 10 scancel $jobs 2>/dev/null || true
        for _ in $(seq 20); do [ -z "$(timeout 5 squeue -h -t R,CG -o %i 2>/dev/null)" ] && break; sleep 0.5; done
    fi
fi

# Stop in reverse order of start: slurmd, slurmctld, munged.
tac "$DIR/pids" | while read -r name pid; do
    alive "$pid" || continue
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq $((GRACE_S * 10))); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then
        echo "slurm-down: $name ($pid) ignored TERM; killing it" >&2
        kill -KILL "$pid" 2>/dev/null
    fi
    echo "slurm-down: stopped $name ($pid)"
done
# munged ran under runuser: its own pid is in munged.pid.
if [ -s "$DIR/munge/munged.pid" ]; then
    pid=$(cat "$DIR/munge/munged.pid")
    if alive "$pid" && grep -q munged "/proc/$pid/comm" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null
        for _ in $(seq $((GRACE_S * 10))); do alive "$pid" || break; sleep 0.1; done
        alive "$pid" && kill -KILL "$pid" 2>/dev/null
    fi
fi
ETC_CONF=/etc/slurm/slurm.conf
if [ -L "$ETC_CONF" ] && [ "$(readlink "$ETC_CONF")" = "$DIR/slurm.conf" ]; then
    rm -f "$ETC_CONF"
fi
mv "$DIR/pids" "$DIR/pids.stopped"
