#!/usr/bin/env bash
# Stop the SSH remote that scripts/remote-up.sh started: exactly the sshd
# whose pid it recorded in $HATECHECK_REMOTE_DIR/pids (TERM, then KILL after
# a grace period). The storage stays (remove the directory to drop it).
set -uo pipefail

DIR=${HATECHECK_REMOTE_DIR:-/tmp/hatecheck-remote}
GRACE_S=${HATECHECK_REMOTE_GRACE_S:-5}

if [ ! -s "$DIR/pids" ]; then
    echo "remote-down: nothing to stop (no $DIR/pids)"
    exit 0
fi
alive() { kill -0 "$1" 2>/dev/null; }
read -r name pid < "$DIR/pids"
if alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq $((GRACE_S * 10))); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then
        echo "remote-down: $name ($pid) ignored TERM; killing it" >&2
        kill -KILL "$pid" 2>/dev/null
    fi
    echo "remote-down: stopped $name ($pid)"
fi
mv "$DIR/pids" "$DIR/pids.stopped"
