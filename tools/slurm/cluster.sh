#!/usr/bin/env bash
# cluster.sh — a one-node Slurm cluster on this machine, entirely inside one folder, for trying
# tools/slurm/hot-tune-sweep.sh and for its test (tests/slurm). Needs root and the Debian packages
# slurm-wlm and munge (tools/install-deps.sh --tests installs them). Nothing outside DIR is written: the
# munge key, munged's socket, slurm.conf, state, spool, logs and pid files all live in DIR, and the
# two Slurm ports are free ports picked at start (never a real cluster's 6817/6818), so it can run
# next to a machine's own munged and Slurm daemons.
#
# Usage: tools/slurm/cluster.sh start|stop|status|env DIR
#   start   creates DIR when missing (DIR and its parents must be searchable by the user munge),
#           a munge key (DIR/munge/munge.key, 1 KiB random, mode 0400, owner munge) on the first
#           start, DIR/slurm.conf; starts munged (as munge), slurmctld and slurmd, and waits until
#           the node is idle (HOT_SLURM_START_TIMEOUT seconds, default 60; on a timeout it prints
#           the daemons' logs, stops them and exits 1). Starting a running cluster only checks it.
#           Then Slurm's clients need:  export SLURM_CONF=DIR/slurm.conf  (printed by start, env)
#   stop    cancels the cluster's jobs, stops the three daemons (by their pid files in DIR) and
#           waits until they are gone (SIGKILL after 20 s). Stopping a stopped cluster is a no-op.
#   status  prints each daemon's state and sinfo; exit 0 when all three run, 3 otherwise.
#   env     prints the export line for SLURM_CONF.
# Exit status: 0 on success, 1 on an error (one line naming the cause), 2 on a usage error.
set -euo pipefail
prog=cluster.sh
die() { echo "$prog: error: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

if [ $# -eq 1 ] && { [ "$1" = --help ] || [ "$1" = -h ]; }; then usage; exit 0; fi
if [ $# -ne 2 ]; then
  echo "$prog: usage: $prog start|stop|status|env DIR (--help for more)" >&2
  exit 2
fi
action=$1
case $action in start|stop|status|env) ;; *)
  echo "$prog: error: unknown action '$action' (start, stop, status or env)" >&2; exit 2 ;;
esac
[ -n "$2" ] || die "DIR is empty"
if [ "$action" = start ]; then
  [ "$(id -u)" -eq 0 ] || die "needs root (slurmd runs jobs as their users; munged runs as munge)"
  for c in munged munge unmunge slurmctld slurmd sinfo squeue scancel runuser; do
    command -v "$c" >/dev/null 2>&1 || die "$c not found on PATH (install slurm-wlm and munge: tools/install-deps.sh --tests)"
  done
  getent passwd munge >/dev/null || die "no user munge (install the munge package)"
fi
if [ "$action" = start ]; then mkdir -p -- "$2" || die "cannot create $2"; fi
[ -d "$2" ] || die "$2: no such folder"
dir=$(cd -- "$2" && pwd -P)
conf=$dir/slurm.conf
mdir=$dir/munge
sock=$mdir/munge.sock
. "$(cd -- "$(dirname -- "$0")/../lib" && pwd -P)/num.sh" # the one parser of numbers
timeout_s=$(num_parse HOT_SLURM_START_TIMEOUT "${HOT_SLURM_START_TIMEOUT:-60}" 0 86400 2>&1) ||
  die "$timeout_s (seconds)"

# pid of daemon NAME when its pid file names a live process started for this DIR, else nothing.
live_pid() {
  local f=$1 pid
  [ -s "$f" ] || return 0
  pid=$(head -n1 "$f" 2>/dev/null | tr -dc 0-9)
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 0
  # A recycled pid belongs to another program: the command line must name a file in DIR.
  if tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "$dir/"; then echo "$pid"; fi
}
pid_munged() { live_pid "$mdir/munged.pid"; }
pid_ctld() { live_pid "$dir/slurmctld.pid"; }
pid_slurmd() { live_pid "$dir/slurmd.pid"; }

print_logs() {
  local f
  for f in "$mdir/munged.log" "$dir/log/slurmctld.log" "$dir/log/slurmd.log"; do
    echo "---- $f (last 40 lines) ----" >&2
    if [ -r "$f" ]; then tail -n 40 "$f" >&2; else echo "(missing)" >&2; fi
  done
}

# Sends TERM to pid (unless told it was sent: $3 = sent), waits up to 20 s, then KILL and waits.
stop_pid() {
  local name=$1 pid=$2 i
  [ -n "$pid" ] || return 0
  if [ "${3:-}" != sent ]; then kill -TERM "$pid" 2>/dev/null || return 0; fi
  for ((i = 0; i < 200; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  echo "$prog: $name (pid $pid) did not stop within 20 s; killing it" >&2
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  die "$name (pid $pid) survived SIGKILL"
}

do_stop() {
  local pc ids i
  pc=$(pid_ctld)
  if [ -n "$pc" ] && [ -r "$conf" ]; then
    # Jobs first, so that no job step outlives the daemons.
    ids=$(SLURM_CONF=$conf timeout 10 squeue -h -o %A 2>/dev/null | sort -u || true)
    if [ -n "$ids" ]; then
      # shellcheck disable=SC2086
      SLURM_CONF=$conf timeout 10 scancel $ids 2>/dev/null || true
      for ((i = 0; i < 100; i++)); do
        [ -z "$(SLURM_CONF=$conf timeout 10 squeue -h -o %A 2>/dev/null || true)" ] && break
        sleep 0.2
      done
    fi
  fi
  # Both Slurm daemons at once (each takes a second or two), munged after them.
  local pd
  pd=$(pid_slurmd)
  pc=$(pid_ctld)
  if [ -n "$pd" ]; then kill -TERM "$pd" 2>/dev/null || true; fi
  if [ -n "$pc" ]; then kill -TERM "$pc" 2>/dev/null || true; fi
  stop_pid slurmd "$pd" sent
  stop_pid slurmctld "$pc" sent
  stop_pid munged "$(pid_munged)"
  rm -f "$dir/slurmd.pid" "$dir/slurmctld.pid" "$mdir/munged.pid"
}

node_state() { SLURM_CONF=$conf timeout 10 sinfo -h -N -o %T 2>/dev/null | head -n1 || true; }

# A TCP port with no socket of any state on it (IPv4 and IPv6), outside Slurm's defaults.
port_used() {
  local hex
  hex=$(printf '%04X' "$1")
  cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk -v h="$hex" 'NR > 1 { split($2, a, ":"); if (a[2] == h) f = 1 } END { exit !f }'
}
pick_ports() {
  local p=$((20000 + ($$ * 7919) % 30000)) n=0 tries=0
  ports=()
  while [ $n -lt 2 ]; do
    tries=$((tries + 1))
    [ $tries -le 2000 ] || die "no free TCP port found in 20000-50000"
    if [ "$p" -ge 50000 ]; then p=20000; fi
    if ! port_used "$p"; then ports+=("$p"); n=$((n + 1)); fi
    p=$((p + 1))
  done
}

all_up() { [ -n "$(pid_munged)" ] && [ -n "$(pid_ctld)" ] && [ -n "$(pid_slurmd)" ]; }

do_start() {
  # Some daemons up but not all: a pid file may be in the middle of being rewritten by a daemon
  # on a loaded machine, so look again for up to 5 s before treating the cluster as broken.
  local w
  for ((w = 0; w < 25; w++)); do
    all_up && break
    [ -z "$(pid_munged)$(pid_ctld)$(pid_slurmd)" ] && break
    sleep 0.2
  done
  if all_up; then
    # The daemons are up: give a busy controller (a loaded machine) up to 20 s to answer before
    # deciding the cluster is broken and restarting it.
    local st i
    for ((i = 0; i < 40; i++)); do
      st=$(node_state)
      case $st in
        idle | mixed | allocated | completing)
          echo "$prog: already running in $dir"
          echo "export SLURM_CONF=$conf"
          return 0 ;;
      esac
      sleep 0.5
    done
  fi
  # Whatever is left of a half-started or crashed cluster goes first.
  do_stop

  runuser -u munge -- test -x "$dir" ||
    die "the user munge cannot enter $dir (make it and its parents searchable: chmod o+x)"
  mkdir -p "$mdir" "$dir/state" "$dir/spool" "$dir/log"
  chown munge:munge "$mdir"
  chmod 0755 "$mdir"
  if [ ! -s "$mdir/munge.key" ]; then
    (umask 077 && head -c 1024 /dev/urandom >"$mdir/munge.key")
  fi
  chown munge:munge "$mdir/munge.key"
  chmod 0400 "$mdir/munge.key"
  rm -f "$sock" "$sock.lock"

  if ! runuser -u munge -- munged --socket="$sock" --key-file="$mdir/munge.key" \
      --pid-file="$mdir/munged.pid" --log-file="$mdir/munged.log" \
      --seed-file="$mdir/munged.seed" 2>"$dir/log/munged.stderr"; then
    cat "$dir/log/munged.stderr" >&2
    print_logs
    die "munged did not start"
  fi
  local i
  for ((i = 0; i < 50; i++)); do [ -S "$sock" ] && break; sleep 0.1; done
  if ! munge -n -S "$sock" 2>/dev/null | unmunge -S "$sock" >/dev/null 2>&1; then
    print_logs
    do_stop
    die "munged runs but a credential does not round-trip through $sock"
  fi

  local host mem cpus
  host=$(hostname -s)
  cpus=$(nproc)
  mem=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 }' /proc/meminfo)
  pick_ports
  cat >"$conf" <<EOF
# Written by tools/slurm/cluster.sh: a one-node test cluster living in $dir.
ClusterName=hotlocal
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=${ports[0]}
SlurmdPort=${ports[1]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=100000
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF

  if ! slurmctld -f "$conf" -i 2>"$dir/log/slurmctld.stderr"; then
    cat "$dir/log/slurmctld.stderr" >&2
    print_logs
    do_stop
    die "slurmctld did not start"
  fi
  if ! slurmd -f "$conf" 2>"$dir/log/slurmd.stderr"; then
    cat "$dir/log/slurmd.stderr" >&2
    print_logs
    do_stop
    die "slurmd did not start"
  fi
  local st=""
  for ((i = 0; i < timeout_s * 5; i++)); do
    st=$(node_state)
    [ "$st" = idle ] && break
    sleep 0.2
  done
  if [ "$st" != idle ]; then
    echo "$prog: node state '${st:-unknown}' after ${timeout_s} s" >&2
    print_logs
    do_stop
    die "the node of the cluster in $dir did not become idle within ${timeout_s} s (HOT_SLURM_START_TIMEOUT)"
  fi
  echo "$prog: cluster up in $dir (node $host, $cpus CPUs, ports ${ports[0]}/${ports[1]})"
  echo "export SLURM_CONF=$conf"
}

do_status() {
  local ok=0 n p
  for n in munged slurmctld slurmd; do
    case $n in munged) p=$(pid_munged) ;; slurmctld) p=$(pid_ctld) ;; slurmd) p=$(pid_slurmd) ;; esac
    if [ -n "$p" ]; then echo "$n: running (pid $p)"; else echo "$n: stopped"; ok=3; fi
  done
  if [ -z "$(pid_ctld)" ]; then return $ok; fi
  SLURM_CONF=$conf timeout 10 sinfo || true
  return $ok
}

case $action in
  start) do_start ;;
  stop) [ "$(id -u)" -eq 0 ] || die "needs root"; do_stop; echo "$prog: stopped (cluster in $dir)" ;;
  status) do_status ;;
  env) echo "export SLURM_CONF=$conf" ;;
esac
