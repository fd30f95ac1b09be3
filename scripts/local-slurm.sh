#!/usr/bin/env bash
# Start a one-node SLURM cluster on this machine, as a laptop or a CI job would have one to
# try the recipes' --launcher slurm (and as tests/cluster/test_slurm.py does).
#
# Usage: bash scripts/local-slurm.sh [start|stop|status]
#
#   start    install SLURM's daemons and commands (slurmctld, slurmd, slurm-client) and munge
#            if they are missing (Debian/Ubuntu, as root: apt-get, without the slurm-wlm
#            metapackage's plugins), write a slurm.conf with one node of all this machine's
#            CPUs (no GPUs), start munged (as user munge), slurmctld and slurmd directly (no
#            systemd), and wait until sinfo shows the node idle.  Does nothing if the cluster
#            already answers with its node taking jobs and this slurm.conf; restarts its
#            daemons if the node does not (slurmd stopped, or the node down or drained) or
#            its slurm.conf is another.  One start at a time ($RELPOS_SLURM_DIR.lock).  A
#            requeued job starts again 11-13 s later (AuthInfo=cred_expire=10 and a pass
#            over the pending jobs every 2 s; SLURM's defaults hold it 121 s, then up to 30).
#   stop     stop the daemons this script started
#   status   sinfo, or exit 1 if no cluster answers
#
# Everything it writes is under $RELPOS_SLURM_DIR (default /tmp/relpos-slurm): slurm.conf,
# state, spool and logs (and beside it, its .lock and .apt.log).  Export
# SLURM_CONF=$RELPOS_SLURM_DIR/slurm.conf to use the cluster from another shell (start
# prints the line).  Needs root (the daemons run as root here).
set -euo pipefail
ACTION=${1:-start}
case "$ACTION" in
  -h|--help) awk 'NR == 1 && /^#!/ { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; exit 0 ;;
  start|stop|status) ;;
  *) echo "error: expected start, stop or status, got '$ACTION' (see --help)" >&2; exit 2 ;;
esac
DIR=${RELPOS_SLURM_DIR:-/tmp/relpos-slurm}
export SLURM_CONF="$DIR/slurm.conf"

answers() { sinfo -h -o %T > /dev/null 2>&1; }
# the node takes jobs: idle or busy, and its slurmd responding (no "*")
usable() { [[ "$(sinfo -h -o %T 2> /dev/null)" =~ ^(idle|mixed|allocated|completing)$ ]]; }
# every daemon started with this slurm.conf, also one whose pid file another start overwrote
stop_daemons() {
  pkill -f "^slurm(ctld|d) -f $SLURM_CONF\$" 2> /dev/null || true
  for _ in $(seq 1 40); do
    pgrep -f "^slurm(ctld|d) -f $SLURM_CONF\$" > /dev/null || return 0
    sleep 0.25
  done
}

if [[ "$ACTION" == status ]]; then
  answers || { echo "no SLURM cluster answers (SLURM_CONF=$SLURM_CONF)" >&2; exit 1; }
  sinfo
  exit 0
fi
if [[ "$ACTION" == stop ]]; then
  stop_daemons
  echo "stopped the SLURM daemons of $DIR"
  exit 0
fi

# one start at a time: the test workers may each ask for the cluster at once.  What is
# started from here on runs with the lock's descriptor closed (9>&-): a daemon holding it
# would keep every later start waiting for ever.
exec 9> "$DIR.lock"
flock 9
HOST=$(hostname -s)
CPUS=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)  # the test runner sets OMP_NUM_THREADS=1, which nproc honours
MEMORY=$(awk '/MemTotal/ { print int($2 / 1024) - 512 }' /proc/meminfo)
# the slurm.conf of this cluster
configuration() {
  cat <<EOF
ClusterName=relpos
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobRequeue=1
MpiDefault=none
SchedulerType=sched/backfill
# a pass over the pending jobs every 2 s, not every 30 (backfill) and 60 (main): a job that
# becomes eligible with no event to schedule it (a requeued one whose wait ends, below) would
# otherwise wait up to half a minute on a node with nothing else to do
SchedulerParameters=bf_interval=2,sched_interval=2
MaxJobCount=10000
KillWait=10
# a requeued job waits cred_expire + 1 s before it starts again (121 s by default)
AuthInfo=cred_expire=10
NodeName=$HOST CPUs=$CPUS RealMemory=$MEMORY State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
}
if command -v sinfo > /dev/null && answers; then
  if usable && [[ "$(cat "$SLURM_CONF" 2> /dev/null)" == "$(configuration)" ]]; then
    echo "a SLURM cluster already answers: export SLURM_CONF=$SLURM_CONF"
    exit 0
  fi
  # a controller whose node takes no jobs (its slurmd stopped) would keep jobs waiting for ever;
  # one started with another slurm.conf is restarted with this one
  echo "the SLURM cluster of $DIR answers (its node $(sinfo -h -o %T)) but is not as this script starts it: restarting its daemons" >&2
  stop_daemons
fi
[[ "$(id -u)" == 0 ]] || { echo "error: starting a local SLURM cluster needs root (apt-get, munge, slurmd)" >&2; exit 1; }
if ! command -v slurmctld > /dev/null || ! command -v munged > /dev/null; then
  command -v apt-get > /dev/null || { echo "error: SLURM (slurmctld, slurmd) and munge are missing and there is no apt-get to install them" >&2; exit 1; }
  apt-get update -qq > "$DIR.apt.log" 2>&1 9>&- || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    slurmctld slurmd slurm-client munge >> "$DIR.apt.log" 2>&1 9>&- ||
    { tail -n 20 "$DIR.apt.log" >&2; echo "error: could not install slurmctld, slurmd, slurm-client and munge (see $DIR.apt.log)" >&2; exit 1; }
fi

mkdir -p "$DIR"/{state,spool,log}
configuration > "$SLURM_CONF"

# munge: a key once, the daemon as its own user
if [[ ! -s /etc/munge/munge.key ]]; then
  mkdir -p /etc/munge
  dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none
fi
chown -R munge:munge /etc/munge /var/lib/munge /var/log/munge 2> /dev/null || true
mkdir -p /run/munge && chown munge:munge /run/munge
chmod 400 /etc/munge/munge.key
pgrep -x munged > /dev/null || su -s /bin/sh munge -c /usr/sbin/munged 9>&-

slurmctld -f "$SLURM_CONF" 9>&-
slurmd -f "$SLURM_CONF" 9>&-
for attempt in $(seq 1 60); do
  # a node the saved state holds down or drained (a job that could not be killed) comes back
  [[ $attempt == 10 && "$(sinfo -h -o %T 2> /dev/null)" =~ ^(down|drain) ]] &&
    scontrol update NodeName="$HOST" State=RESUME 2> /dev/null
  if [[ "$(sinfo -h -o %T 2> /dev/null)" == idle ]]; then
    echo "SLURM is up: one node ($HOST, $CPUS CPUs, partition debug). export SLURM_CONF=$SLURM_CONF"
    exit 0
  fi
  sleep 0.5
done
echo "error: the SLURM node did not become idle (see $DIR/log/)" >&2
sinfo >&2 || true
exit 1
