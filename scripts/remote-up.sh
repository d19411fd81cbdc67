#!/usr/bin/env bash
# Start a DVC remote on a real SSH server on this machine, for sharing runs
# (docs/sharing.md) and for the two-clone test: Debian's openssh-server
# (sshd) listening on 127.0.0.1, with a host key and a client key generated
# for it, key-only login of the user who starts it, and the remote's storage
# in $HATECHECK_REMOTE_DIR/storage. sshd's pid goes to $HATECHECK_REMOTE_DIR/pids;
# scripts/remote-down.sh stops exactly that process.
#
# Runs as any user (sshd then accepts that user only); openssh-server is
# installed with apt when missing and we are root (scripts/setup.sh does it too).
# Usage:  bash scripts/remote-up.sh   (prints the `dvc remote` commands)
#         bash scripts/remote-down.sh
set -euo pipefail

DIR=${HATECHECK_REMOTE_DIR:-/tmp/hatecheck-remote}
PORT=${HATECHECK_REMOTE_PORT:-2222}
WAIT_S=${HATECHECK_REMOTE_WAIT_S:-20}
USER_NAME=$(id -un)

die() { echo "remote-up: $*" >&2; exit 1; }

if [ -s "$DIR/pids" ]; then
    read -r _ pid < "$DIR/pids"
    kill -0 "$pid" 2>/dev/null && die "an SSH remote started by this script is already running (pid $pid, $DIR/pids); stop it with scripts/remote-down.sh"
fi

SSHD=$(command -v sshd || echo /usr/sbin/sshd)
if [ ! -x "$SSHD" ]; then
    [ "$(id -u)" = 0 ] || die "sshd not found: install Debian's openssh-server (apt-get install openssh-server) as root"
    echo "remote-up: installing openssh-server" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-server >/dev/null
    SSHD=/usr/sbin/sshd
fi

# A clean state directory: only an empty one or one this script wrote.
if [ -d "$DIR" ] && [ -n "$(ls -A "$DIR")" ]; then
    grep -qs 'written by scripts/remote-up.sh' "$DIR/sshd_config" || die "$DIR is not empty and not a state directory of this script; choose another HATECHECK_REMOTE_DIR"
    rm -rf "$DIR"
fi
mkdir -p "$DIR"/{keys,storage,log}
chmod 700 "$DIR/keys"
ssh-keygen -q -t ed25519 -N '' -C "hatecheck-remote host" -f "$DIR/keys/host_ed25519"
ssh-keygen -q -t ed25519 -N '' -C "hatecheck-remote client" -f "$DIR/keys/client_ed25519"
cp "$DIR/keys/client_ed25519.pub" "$DIR/keys/authorized_keys"
echo "[127.0.0.1]:$PORT $(cut -d' ' -f1,2 "$DIR/keys/host_ed25519.pub")" > "$DIR/keys/known_hosts"

cat > "$DIR/sshd_config" <<CONF
# sshd for a DVC remote, written by scripts/remote-up.sh (hatecheck-pipeline).
Port $PORT
ListenAddress 127.0.0.1
HostKey $DIR/keys/host_ed25519
PidFile $DIR/sshd.pid
AuthorizedKeysFile $DIR/keys/authorized_keys
AllowUsers $USER_NAME
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
# The state directory lives under /tmp (group/world-writable parents).
StrictModes no
# DVC's ssh remote (dvc-ssh, asyncssh) transfers over SFTP.
Subsystem sftp internal-sftp
CONF
# sshd started by root needs its privilege separation directory.
[ "$(id -u)" = 0 ] && mkdir -p /run/sshd && chmod 755 /run/sshd

"$SSHD" -t -f "$DIR/sshd_config" || die "sshd rejects $DIR/sshd_config"
"$SSHD" -D -e -f "$DIR/sshd_config" > "$DIR/log/sshd.log" 2>&1 &
echo "sshd $!" > "$DIR/pids"

# Wait until a login with the generated key works (or give up, naming the log).
ssh_ok() {
    ssh -q -i "$DIR/keys/client_ed25519" -p "$PORT" -o BatchMode=yes -o IdentitiesOnly=yes \
        -o UserKnownHostsFile="$DIR/keys/known_hosts" -o StrictHostKeyChecking=yes -o ConnectTimeout=2 \
        "$USER_NAME@127.0.0.1" true 2>/dev/null
}
deadline=$((SECONDS + WAIT_S))
until ssh_ok; do
    if [ $SECONDS -ge $deadline ]; then
        echo "remote-up: no SSH login after ${WAIT_S}s; $DIR/log/sshd.log:" >&2
        tail -n 20 "$DIR/log/sshd.log" >&2 || true
        bash "$(dirname "$0")/remote-down.sh" || true
        exit 1
    fi
    sleep 0.3
done

URL="ssh://$USER_NAME@127.0.0.1:$PORT$DIR/storage"
cat > "$DIR/remote.env" <<ENV
HATECHECK_REMOTE_URL=$URL
HATECHECK_REMOTE_KEY=$DIR/keys/client_ed25519
HATECHECK_REMOTE_KNOWN_HOSTS=$DIR/keys/known_hosts
ENV
echo "remote-up: SSH remote running (sshd pid $(cut -d' ' -f2 "$DIR/pids"), storage $DIR/storage); in a clone:"
echo "  dvc remote add -d team $URL"
echo "  dvc remote modify --local team keyfile $DIR/keys/client_ed25519"
echo "and trust its host key (DVC's ssh client reads ~/.ssh/known_hosts):"
echo "  cat $DIR/keys/known_hosts >> ~/.ssh/known_hosts"
