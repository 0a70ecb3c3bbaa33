#!/usr/bin/env bash
# A one-node Slurm cluster on 127.0.0.1 for the tests and CI (no systemd): munged, slurmctld and slurmd
# started by hand with a generated slurm.conf.  Needs root and Debian's slurm-wlm and munge.
#
#   eval "$(bash scripts/slurm_local.sh start [DIR])"   # prints `export SLURM_CONF=DIR/slurm.conf`
#   bash scripts/slurm_local.sh stop [DIR]
#
# DIR (default /tmp/lattice-tools-slurm) holds the config, state, logs and pid files.  `start` waits
# until the node is idle (at most 60 s) and fails with the daemons' logs otherwise.
set -euo pipefail
action=${1:-}; dir=${2:-/tmp/lattice-tools-slurm}
case "$action" in
  start|stop) ;;
  *) echo "usage: $0 start|stop [DIR]" >&2; exit 2 ;;
esac

stop() {
  for d in slurmd slurmctld munged; do
    if [ -f "$dir/$d.pid" ]; then kill "$(cat "$dir/$d.pid")" 2>/dev/null || true; rm -f "$dir/$d.pid"; fi
  done
}
if [ "$action" = stop ]; then stop; exit 0; fi

for b in munged slurmctld slurmd sbatch sinfo; do
  command -v "$b" >/dev/null || { echo "$0: $b not found (apt-get install slurm-wlm munge)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "$0: needs root (the daemons run as root here)" >&2; exit 1; }
stop
mkdir -p "$dir"/{state,spool,log,munge}
chmod 700 "$dir/munge"
host=$(hostname -s)
cpus=$(nproc)
mem_mb=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 512 ))

# munge: its own key, socket and pid under DIR (the system's, if any, is left alone)
[ -f "$dir/munge/munge.key" ] || dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge/munge.key"
munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
  --pid-file="$dir/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munge.seed"

cat > "$dir/slurm.conf" <<CONF
ClusterName=lattice-tools-test
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldPort=16817
SlurmdPort=16818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$dir/slurm.conf"
slurmctld -i
slurmd
for _ in $(seq 60); do
  if sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
    echo "export SLURM_CONF=$dir/slurm.conf"
    exit 0
  fi
  sleep 1
done
echo "$0: the Slurm node did not become idle in 60 s" >&2
tail -n 20 "$dir"/log/*.log >&2 || true
exit 1
