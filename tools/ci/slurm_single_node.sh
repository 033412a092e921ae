#!/usr/bin/env bash
# A real one-node Slurm cluster (Debian's slurm-wlm, authenticated with munge) for CI, so that
# CI can put a job array, a dependent job and `sbatch --wait` through the real sbatch, slurmctld
# and slurmd. Made for a fresh, container-like Debian 12/13 or Ubuntu 22.04/24.04 machine where
# we are root and no systemd runs: every daemon is started here by hand, in the background.
#
#   tools/ci/slurm_single_node.sh start    install slurm-wlm and munge if missing, write the
#                                          config, start munged, slurmctld and slurmd, and wait
#                                          until the node is idle (exit 1, with the daemons'
#                                          logs, if it does not come up in time; what did
#                                          start is left running for a look, `stop` ends it)
#   tools/ci/slurm_single_node.sh stop     cancel what is left in the queue and stop the
#                                          daemons this script started
#   tools/ci/slurm_single_node.sh status   sinfo and squeue (exit 3 if the cluster is down)
#   tools/ci/slurm_single_node.sh --help   this text
#
# Environment (all optional):
#   SLURM_CI_DIR      state, spool, logs and pid files       [/var/spool/slurm-ci]
#   SLURM_CI_CPUS     CPUs the node announces                [$(nproc)]; more than the machine
#                     has is allowed (the node is then told to trust the config, see below), so
#                     that jobs with e.g. --cpus-per-task=4 fit on a 2-core CI machine
#   SLURM_CI_TIMEOUT  seconds `start` waits for the node     [60]
#
# `start` is idempotent: with the daemons already up it only waits for the node. It writes
# slurm.conf where the installed Slurm looks for it by default (/etc/slurm/slurm.conf on all
# the distributions above; read from the library, see conf_path), so plain sbatch/sinfo work
# without SLURM_CONF. It refuses to overwrite a slurm.conf that it did not write.
#
# Why the configuration is what it is. Tested with slurm-wlm 22.05.8 on Debian 12 and 24.11.5
# on Debian 13 (a chroot on the same machine), on a 2-core CI machine that is a gVisor sandbox
# without systemd; Ubuntu's 21.08 / 23.11 were not tried.
#   - No cgroups at all: ProctrackType=proctrack/linuxproc (tracks a job's processes through
#     the parent-pid tree in /proc), TaskPlugin=task/none (no CPU binding or memory limits) and
#     JobAcctGatherType=jobacct_gather/none. With proctrack/cgroup + task/cgroup the cluster
#     comes up, but every job fails in slurmstepd ("cgroup namespace 'freezer' not mounted")
#     without running, and the node is drained ("batch job complete failure"): gVisor's
#     cgroup v1 mounts are there but not usable, and ordinary containers have cgroups read-only
#     or undelegated. Nothing in CI needs enforced limits.
#   - cgroup.conf with CgroupPlugin=disabled, on Slurm >= 24.05 only: see write_config.
#   - slurmctld -c: see cmd_start.
#   - EnforcePartLimits=ALL: a job that can never fit (say --cpus-per-task=4 on a 2-CPU node)
#     is refused by sbatch ("More processors requested than permitted") instead of pending
#     for ever with Reason=PartitionConfig, which would hang `sbatch --wait`.
#   - SlurmUser=root and SlurmdUser=root: no slurm account and no file ownership to get right.
#   - SlurmctldHost=<host>(127.0.0.1) and NodeAddr=127.0.0.1: all traffic stays on loopback
#     and nothing depends on the host name resolving.
#   - SelectType=select/cons_tres with SelectTypeParameters=CR_CPU: CPUs are the consumable
#     resource (not cores, so a hyper-threaded machine does not hand out two CPUs per task);
#     memory is not consumable, so a job that asks for no memory does not take the whole node.
#   - RealMemory = MemTotal minus 10% (at least 256 MB): slurmd drains a node that has less
#     memory than slurm.conf claims, and MemTotal moves a little between boots.
#   - No Gres: a job with --gres=gpu:N is refused at submission ("Invalid generic resource
#     (gres) specification"). This cluster shows scheduling, not GPUs.
#   - ReturnToService=2: a node set DOWN because its slurmd stopped answering ("Not
#     responding") is back in service as soon as that slurmd registers again.
#   - No accounting database (slurmdbd): sacct has nothing to show; squeue/scontrol work.
set -euo pipefail

prog=$(basename "$0")
base=${SLURM_CI_DIR:-/var/spool/slurm-ci}
timeout=${SLURM_CI_TIMEOUT:-60}
node=$(hostname -s)
marker="# Written by tools/ci/slurm_single_node.sh"

is_count() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }
is_count "$timeout" || { echo "$prog: SLURM_CI_TIMEOUT must be a number of seconds" >&2; exit 2; }
is_count "${SLURM_CI_CPUS:-1}" || { echo "$prog: SLURM_CI_CPUS must be a positive number" >&2; exit 2; }

usage() { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; }
say() { echo "[$prog] $*"; }
die() { echo "[$prog] error: $*" >&2; exit 1; }

# ---------------------------------------------------------------------------------------------
# Installation

# Installs slurm-wlm and munge from the apt sources the machine already has, if a piece is
# missing. Recommended packages are left out: they are Slurm's development headers and extra
# plugins (about 40 packages), which a one-node cluster does not use.
install_packages() {
  local missing=0 cmd
  for cmd in slurmctld slurmd sbatch sinfo munged munge; do
    command -v "$cmd" >/dev/null || missing=1
  done
  [ "$missing" -eq 0 ] && return 0
  [ "$(id -u)" -eq 0 ] || die "slurm-wlm/munge are missing and installing them needs root"
  say "installing slurm-wlm and munge with apt-get"
  # Debian's maintainer scripts try to start munge and slurmctld with invoke-rc.d; without
  # systemd that runs the SysV scripts, whose failure would fail the install. A policy-rc.d
  # that answers 101 ("action forbidden") stops that for the install only: we start the
  # daemons ourselves below. One already there (Docker images ship one) is left alone.
  local policy=/usr/sbin/policy-rc.d added_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy"
    chmod 755 "$policy"
    added_policy=1
  fi
  local rc=0
  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      slurm-wlm munge; } || rc=$?
  [ "$added_policy" -eq 1 ] && rm -f "$policy"
  [ "$rc" -eq 0 ] || die "apt-get could not install slurm-wlm and munge (exit $rc)"
}

# ---------------------------------------------------------------------------------------------
# munge

munge_works() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }

start_munge() {
  if munge_works; then
    say "munged: already running"
    return 0
  fi
  local key=/etc/munge/munge.key
  if [ ! -s "$key" ]; then
    # The munge package usually makes one when installed; this covers images that removed it.
    say "creating $key"
    install -d -o munge -g munge -m 0700 /etc/munge
    mungekey --create --keyfile="$key" 2>/dev/null \
      || dd if=/dev/urandom of="$key" bs=1024 count=1 status=none
    chown munge:munge "$key"
    chmod 0400 "$key"
  fi
  # systemd's tmpfiles.d would make /run/munge; without systemd nobody does.
  install -d -o munge -g munge -m 0755 /run/munge
  install -d -o munge -g munge -m 0700 /var/log/munge /var/lib/munge
  # munged refuses to run as root; it runs as the munge user, as under systemd.
  runuser -u munge -- munged || true   # its failure is reported below, with its log
  local _
  for _ in $(seq 1 50); do
    munge_works && break
    sleep 0.2
  done
  if ! munge_works; then
    tail -n 20 /var/log/munge/munged.log >&2 2>/dev/null || true
    die "munged did not start (log above)"
  fi
  # A copy of its pid, so that `stop` stops munged only if this script started it.
  if cp /run/munge/munged.pid "$base/run/munged.pid" 2>/dev/null; then
    say "munged: started (pid $(cat "$base/run/munged.pid"))"
  else
    say "munged: started (no /run/munge/munged.pid: 'stop' will leave it running)"
  fi
}

# ---------------------------------------------------------------------------------------------
# Slurm configuration

# Where the installed Slurm reads slurm.conf from: the default is compiled into libslurmfull
# (/etc/slurm/slurm.conf since Debian 11 / Ubuntu 22.04; /etc/slurm-llnl/ before). SLURM_CONF,
# if set, wins, as it does for Slurm's own commands.
conf_path() {
  if [ -n "${SLURM_CONF:-}" ]; then
    echo "$SLURM_CONF"
    return
  fi
  local lib found=""
  lib=$(ldd "$(command -v sinfo)" 2>/dev/null | awk '/libslurm/ {print $3; exit}')
  if [ -n "$lib" ] && [ -r "$lib" ]; then
    found=$(grep -aoE '/etc/slurm[a-z-]*/slurm\.conf' "$lib" | head -n 1 || true)
  fi
  echo "${found:-/etc/slurm/slurm.conf}"
}

write_config() {
  local conf=$1 cpus mem_kb mem_mb margin overrides=""
  cpus=${SLURM_CI_CPUS:-$(nproc)}
  mem_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
  mem_mb=$((mem_kb / 1024))
  margin=$((mem_mb / 10 > 256 ? mem_mb / 10 : 256))
  if [ "$cpus" -gt "$(nproc)" ]; then
    # With more CPUs configured than the machine has, slurmd would mark the node INVALID
    # ("Low socket*core*thread count"); config_overrides makes it trust slurm.conf instead.
    overrides="SlurmdParameters=config_overrides"
  fi
  if [ -e "$conf" ] && ! grep -qF "$marker" "$conf"; then
    die "$conf exists and was not written by this script; move it away first (this script is for a throwaway CI machine)"
  fi
  mkdir -p "$(dirname "$conf")"
  cat > "$conf.tmp" <<EOF
$marker: a one-node cluster for CI.
# Every setting is explained at the top of that script.
ClusterName=ci
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge

StateSaveLocation=$base/ctld
SlurmdSpoolDir=$base/d
SlurmctldPidFile=$base/run/slurmctld.slurm.pid
SlurmdPidFile=$base/run/slurmd.slurm.pid
SlurmctldLogFile=$base/log/slurmctld.log
SlurmdLogFile=$base/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info

ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
EnforcePartLimits=ALL
MailProg=/bin/true
$overrides

NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$((mem_mb - margin)) State=UNKNOWN
PartitionName=ci Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
  mv "$conf.tmp" "$conf"
  say "wrote $conf (node $node: CPUs=$cpus RealMemory=$((mem_mb - margin)) MB)"

  # slurmd loads a cgroup plugin whatever ProctrackType/TaskPlugin say ("autodetect" by
  # default), and fails to start if /sys/fs/cgroup is missing, unknown, or cgroup v2 that it
  # cannot write to. Slurm 24.05 and newer (Debian 13) can switch that off in cgroup.conf.
  # Older ones (22.05 in Debian 12, 21.08 / 23.11 in Ubuntu 22.04 / 24.04) cannot: they need
  # a cgroup v1 layout (which they only read at start-up) or a writable cgroup v2 tree.
  local cg_conf version
  cg_conf=$(dirname "$conf")/cgroup.conf
  version=$(slurmd -V | awk '{print $2}')
  if [ -e "$cg_conf" ] && ! grep -qF "$marker" "$cg_conf"; then
    say "leaving $cg_conf alone (not written by this script)"
  elif version_at_least "$version" 24.05; then
    printf '%s: no cgroups for a CI node.\nCgroupPlugin=disabled\n' "$marker" > "$cg_conf"
    say "wrote $cg_conf (CgroupPlugin=disabled, Slurm $version)"
  else
    rm -f "$cg_conf"
  fi
}

# True if dotted version $1 is at least $2 (compares the first two numbers).
version_at_least() {
  local a1 a2 b1 b2
  IFS=. read -r a1 a2 _ <<< "$1"
  IFS=. read -r b1 b2 _ <<< "$2"
  [ "$a1" -gt "$b1" ] || { [ "$a1" -eq "$b1" ] && [ "$a2" -ge "$b2" ]; }
}

# ---------------------------------------------------------------------------------------------
# Daemons

# Starts daemon $1 (slurmctld or slurmd) with the rest as its command line, in the foreground
# mode (-D) but in a session of its own, in the background. Not Slurm's own daemon mode: in
# Slurm 24.11 slurmd forks before it initialises, so a slurmd that dies at once still returns
# 0 and shows up only as a timeout. This way the pid is known at once (the inner shell
# writes its own pid, then execs the daemon in its place; Slurm's own pid files are separate and
# vanish when a daemon exits), `start` notices a daemon that dies,
# and what a daemon prints before its log file is open lands in $base/log/NAME.stderr.
launch() {
  local name=$1
  shift
  rm -f "$base/run/$name.pid"
  # shellcheck disable=SC2016  # $$ and $1 are the inner shell's
  setsid bash -c 'echo $$ > "$1"; shift; exec "$@"' _ "$base/run/$name.pid" "$@" -D \
    > "$base/log/$name.stderr" 2>&1 < /dev/null &
  local _
  for _ in $(seq 1 50); do
    [ -s "$base/run/$name.pid" ] && return 0
    sleep 0.1
  done
  die "$name: no pid file after 5 s"
}

# True if process $1 runs. Not `kill -0`: a daemon that died stays a zombie until pid 1 reaps
# it, and in a container pid 1 may take its time (seconds, seen here) or never do it.
running() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }   # the fields after "(command name) "; the first is the state
  case ${stat%% *} in Z|X|x) return 1 ;; esac
}

# The pid in file $1 if that process runs.
alive_pid() {
  local pid
  [ -s "$1" ] || return 1
  pid=$(cat "$1")
  running "$pid" && echo "$pid"
}

show_logs() {
  local f
  {
    echo "---- diagnostics ----"
    sinfo -N -l 2>&1 || true
    scontrol show node "$node" 2>&1 | grep -E 'State=|Reason=|CPUTot|RealMemory' || true
    for f in "$base/log/slurmctld.stderr" "$base/log/slurmctld.log" "$base/log/slurmd.stderr" \
             "$base/log/slurmd.log" /var/log/munge/munged.log; do
      echo "---- last lines of $f ----"
      tail -n 30 "$f" 2>/dev/null || echo "(no such file)"
    done
  } >&2
}

# Waits until $1 succeeds or the deadline passes.
wait_for() {
  local what=$1 deadline=$2
  shift 2
  local d
  while ! "$@" >/dev/null 2>&1; do
    for d in slurmctld slurmd; do
      if [ -e "$base/run/$d.pid" ] && ! alive_pid "$base/run/$d.pid" >/dev/null; then
        show_logs
        die "$d exited while waiting for: $what (diagnostics above)"
      fi
    done
    if [ "$(date +%s)" -ge "$deadline" ]; then
      show_logs
      die "$what did not happen within ${timeout}s (diagnostics above)"
    fi
    sleep 0.5
  done
}

ctld_up() { scontrol ping 2>/dev/null | grep -q 'is UP'; }

# The node is up when it is idle, or busy with jobs (start called again while jobs run).
node_up() {
  local state
  state=$(sinfo -h -N -n "$node" -o %T 2>/dev/null) || return 1
  case "$state" in
    idle|mixed|allocated|completing) return 0 ;;
    *) return 1 ;;
  esac
}

cmd_start() {
  local t0 deadline conf pid
  t0=$(date +%s)
  [ "$(id -u)" -eq 0 ] || die "start needs root (it starts system daemons)"
  install_packages
  deadline=$(($(date +%s) + timeout))   # for the daemons, not for apt
  install -d -m 0755 "$base" "$base/run" "$base/log" "$base/d"
  install -d -m 0700 "$base/ctld"
  local d
  for d in slurmctld slurmd; do   # pid files of daemons that died since: forget them
    alive_pid "$base/run/$d.pid" >/dev/null || rm -f "$base/run/$d.pid"
  done
  start_munge
  conf=$(conf_path)

  if pid=$(alive_pid "$base/run/slurmctld.pid"); then
    say "slurmctld: already running (pid $pid); config left as it is"
  else
    write_config "$conf"
    # -c: start from a clean state. Without it slurmctld restores the saved node state, and a
    # node once drained (say by a start with other CPUs) stays drained across restarts, with
    # its old Reason, whatever slurm.conf now says. The price: nothing queued before `stop`
    # survives (`stop` cancels it anyway); job ids still go on from the last one.
    launch slurmctld slurmctld -c
    say "slurmctld: started"
  fi
  wait_for "slurmctld answering 'scontrol ping'" "$deadline" ctld_up

  if pid=$(alive_pid "$base/run/slurmd.pid"); then
    say "slurmd: already running (pid $pid)"
  else
    launch slurmd slurmd -N "$node"
    say "slurmd: started"
  fi
  wait_for "node $node becoming idle in sinfo" "$deadline" node_up
  sinfo
  say "cluster up in $(($(date +%s) - t0))s (config $conf, logs in $base/log)"
}

# Sends TERM to the pid in $2 (named $1), waits up to 15 s, then KILL.
stop_pid_file() {
  local name=$1 file=$2 pid
  if ! pid=$(alive_pid "$file"); then
    say "$name: not running"
    rm -f "$file"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 150); do
    running "$pid" || break
    sleep 0.1
  done
  if running "$pid"; then
    say "$name: still there after 15 s, sending KILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$file"
  say "$name: stopped (pid $pid)"
}

cmd_stop() {
  local jobs
  # Jobs left running would go on without a slurmd to report to (each has its own slurmstepd).
  if ctld_up; then
    jobs=$(squeue -h -o %A 2>/dev/null | sort -u | tr '\n' ' ')
    if [ -n "${jobs// /}" ]; then
      say "cancelling jobs still queued or running: $jobs"
      # shellcheck disable=SC2086
      scancel $jobs 2>/dev/null || true
      for _ in $(seq 1 20); do
        [ -z "$(squeue -h -t running,completing -o %A 2>/dev/null)" ] && break
        sleep 0.5
      done
    fi
  fi
  stop_pid_file slurmd "$base/run/slurmd.pid"
  stop_pid_file slurmctld "$base/run/slurmctld.pid"
  # munged only if this script started it (a munged that was there before is left alone).
  if [ -e "$base/run/munged.pid" ]; then
    stop_pid_file munged "$base/run/munged.pid"
  else
    say "munged: not started by this script, left alone"
  fi
}

cmd_status() {
  if ! ctld_up; then
    say "slurmctld is not answering (run '$prog start')"
    exit 3
  fi
  sinfo
  squeue
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  -h|--help|help) usage ;;
  "") usage >&2; exit 2 ;;
  *) echo "$prog: unknown command '$1' (try --help)" >&2; exit 2 ;;
esac
