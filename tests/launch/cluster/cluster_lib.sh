# shellcheck shell=bash
# The cluster tests' library, sourced by each scenario: two simulated hosts (network namespaces node0
# and node1 joined by a veth pair), a real Slurm (munged, slurmctld, slurmd) on one or both of them,
# bounded commands, a deadline, and a teardown that always runs and leaves no daemon, namespace or
# folder behind. Also the training flags every scenario uses and the one-process reference run.
#
# Every run has its own names, from the scenario's pid (TZC_ID): namespaces tzc<ID>-node0/1, veth ends
# tzc<ID>a/b while they are created, state folder /run/tierzero-cluster/<ID> (daemons' sockets, pid
# files, spool and logs; /run, not /tmp: node_exec.sh gives each node its own empty /tmp). All daemons
# run inside the run's namespaces, so the teardown ends them by namespace, not by name or pid file. A
# run killed outright (ctest's TIMEOUT sends SIGKILL) leaves these behind; the next run removes every
# leftover whose owner is gone before it starts (tzc_sweep), and never touches a live run's.
#
# Exit codes: 0 the scenario passed, 1 it failed, 77 it cannot run here (printed reason; ctest shows a
# skip).

TZC_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TZC_ROOT=/run/tierzero-cluster
TZC_NODE=$TZC_HERE/node_exec.sh  # "$TZC_NODE" NODE CMD... runs CMD on a simulated host
TZC_SKIP=77
TZC_STEPS=5
# The model and run every scenario trains: ZeRO-3 with the optimizer states offloaded, a tiny GPT, 5
# steps (about 0.1 s of compute per rank). Each scenario adds the offload tier, the micro-batch and
# --metrics; the reference adds the same with the global batch on one process.
TZC_TRAIN_FLAGS=(train --zero-stage 3 --model tiny --seq-len 32 --steps "$TZC_STEPS" --lr 1e-3
                 --param-persistence-threshold 0 --val-batches 1 --log-every 1 --comm-timeout 60)
TZC_CHILD=""
TZC_WATCHDOG=""

tzc_log() { printf '[%s] %s\n' "$(date +%T)" "$*"; }
tzc_skip() { echo "SKIP: $*"; exit "$TZC_SKIP"; }
tzc_fail() { echo "FAIL: $*"; exit 1; }
tzc_fail_log() { cat "$1"; shift; tzc_fail "$@"; }  # tzc_fail_log LOG MESSAGE: the command's output, then FAIL

# -- what this machine must offer (each missing piece is a skip, with the reason) --
tzc_need_root() {
  [ "$(id -u)" = 0 ] || tzc_skip "needs root (network namespaces, mounts and the Slurm daemons); running as $(id -un)"
}
tzc_need_cmds() {  # tzc_need_cmds CMD... : each on PATH (or an executable path)
  local c missing=()
  for c; do command -v "$c" >/dev/null 2>&1 || missing+=("$c"); done
  ((${#missing[@]} == 0)) ||
    tzc_skip "missing ${missing[*]} (on Debian 12, bash scripts/install-deps.sh installs what these tests need)"
}
tzc_need_slurm() {
  tzc_need_cmds munged mungekey slurmctld slurmd srun sbatch squeue sinfo scontrol
}

# -- bounded commands and the deadline --
# tzc_run SECONDS CMD... : runs CMD in the background and waits for it, so that a signal to the scenario
# (its deadline, Ctrl-C) is handled at once, not after CMD ends; CMD gets SIGTERM after SECONDS and
# SIGKILL 5 s later (status 124 or 137).
tzc_run() {
  local secs=$1 rc
  shift
  timeout -k 5 "$secs" "$@" &
  TZC_CHILD=$!
  wait "$TZC_CHILD"
  rc=$?
  TZC_CHILD=""
  return "$rc"
}
# SIGTERM to the scenario after SECONDS; its trap then tears down and fails. The watchdog polls once a
# second and ends by itself when the scenario is gone (killed outright), so that it never signals a
# process that has since taken the scenario's pid.
tzc_start_watchdog() {
  local main=$$ secs=$1
  (
    exec </dev/null >/dev/null 2>&1  # never hold ctest's output pipe open
    local me=$BASHPID i
    for ((i = 0; i < secs; i++)); do
      sleep 1
      [ "$(sed 's/.*) //' "/proc/$me/stat" | awk '{ print $2 }')" = "$main" ] || exit 0
    done
    kill -TERM "$main"
  ) &
  TZC_WATCHDOG=$!
}

# -- ownership of state folders: a run's folder is live while its owner process (pid + start time) is --
tzc_proc_start() { [ -r "/proc/$1/stat" ] && sed 's/.*) //' "/proc/$1/stat" | awk '{ print $20 }'; }
tzc_owner_alive() {  # tzc_owner_alive ID : the run ID's scenario process is still running
  local pid start
  read -r pid start 2>/dev/null <"$TZC_ROOT/$1/owner" || return 1
  [ -n "$pid" ] && [ "$(tzc_proc_start "$pid")" = "$start" ]
}

# Ends every process in run ID's namespaces (the daemons, their job steps, mpirun's daemons, ranks),
# deletes the namespaces (the veth pair with them) and its state folder.
tzc_ns_pids() {  # tzc_ns_pids ID : the processes in run ID's namespaces
  local ns
  for ns in "tzc$1-node0" "tzc$1-node1"; do
    [ -e "/run/netns/$ns" ] && ip netns pids "$ns" 2>/dev/null
  done
}
tzc_destroy() {
  local id=$1 ns i pids sig=TERM
  # SIGTERM first (slurmd ends its job steps, Open MPI its ranks), SIGKILL what is left after 2 s.
  for i in $(seq 30); do
    pids=$(tzc_ns_pids "$id")
    [ -z "$pids" ] && break
    ((i == 10)) && sig=KILL
    # shellcheck disable=SC2086 # a list of pids
    ((i == 1 || i == 10)) && kill -"$sig" $pids 2>/dev/null
    sleep 0.2
  done
  for ns in "tzc$id-node0" "tzc$id-node1"; do
    [ -e "/run/netns/$ns" ] && ip netns del "$ns" 2>/dev/null
  done
  ip link del "tzc${id}a" 2>/dev/null  # a veth pair not yet moved into the namespaces
  rm -rf "${TZC_ROOT:?}/$id"
}

# Removes what runs whose scenario process is gone left behind (killed by ctest's TIMEOUT, say).
tzc_sweep() {
  local d id ns
  for d in "$TZC_ROOT"/*; do
    [ -d "$d" ] || continue
    id=${d##*/}
    tzc_owner_alive "$id" && continue
    tzc_log "removing the leftovers of an earlier run that did not end cleanly (tzc$id: $d)"
    tzc_destroy "$id"
  done
  # Namespaces or a veth pair whose state folder is gone (a run killed while it set up or tore down).
  for ns in $( (ip netns list 2>/dev/null | awk '{ print $1 }'; ip -o link show 2>/dev/null | awk -F': ' '{ print $2 }' | cut -d@ -f1) |
               grep -E '^tzc[0-9]+(-node[01]|a|b)$'); do
    id=${ns#tzc}
    id=${id%%[!0-9]*}
    [ -d "$TZC_ROOT/$id" ] && continue
    tzc_log "removing the leftovers of an earlier run that did not end cleanly ($ns)"
    tzc_destroy "$id"
  done
}

tzc_on_signal() {
  echo "FAIL: stopped by SIG$1 (the scenario's ${TZC_DEADLINE} s deadline, or the caller)"
  [ -n "$TZC_CHILD" ] && kill -TERM "$TZC_CHILD" 2>/dev/null
  exit 1  # the EXIT trap tears down
}
tzc_teardown() {
  local rc=$?
  trap - EXIT INT TERM HUP
  [ -n "$TZC_WATCHDOG" ] && kill "$TZC_WATCHDOG" 2>/dev/null
  [ -n "$TZC_CHILD" ] && kill -TERM "$TZC_CHILD" 2>/dev/null && sleep 0.5 && kill -KILL "$TZC_CHILD" 2>/dev/null
  if ((rc != 0 && rc != TZC_SKIP)) && [ -d "${TZC_STATE:-}/log" ]; then
    tzc_log "the daemons' logs, ends:"
    tail -n 12 "$TZC_STATE"/log/* "$TZC_STATE"/munge/*.log 2>/dev/null | sed 's/^/    /'
  fi
  [ -d "${TZC_STATE:-}" ] && tzc_destroy "$TZC_ID"
  if ((rc == 0 || rc == TZC_SKIP)); then
    rm -rf "$TZC_WORK"
  else
    echo "the run's files are kept in $TZC_WORK"
  fi
  wait 2>/dev/null  # the watchdog
  exit "$rc"
}

# Each simulated host has a /tmp and a /dev/shm of its own (node_exec.sh), yet must see this run's files
# where they are, as on a cluster with a shared file system: tzc_bind_back PATH... exports in
# TZC_BIND_BACK (one a line) the top entry, /tmp/NAME or /dev/shm/NAME, of each PATH under /tmp or
# /dev/shm, and node_exec.sh binds those back into each host. /tmp or /dev/shm itself is left out: it is
# what the hosts keep their own of (a current folder of /tmp is then the host's own /tmp).
tzc_bind_back() {
  local p top list=""
  for p; do
    p=$(realpath -m "$p")
    case "$p" in
      /tmp/*) top=${p#/tmp/} && top=/tmp/${top%%/*} ;;
      /dev/shm/*) top=${p#/dev/shm/} && top=/dev/shm/${top%%/*} ;;
      *) continue ;;
    esac
    grep -Fqx -- "$top" <<<"$list" || list+=$top$'\n'
  done
  export TZC_BIND_BACK=$list
}

# tzc_begin NAME DEADLINE : the run's identity, work folder and state folder, the leftover sweep, the
# traps and the deadline. The work folder (metrics, logs, the NVMe store) is under TZC_WORK_DIR
# (default: the current folder, the build tree under ctest). The checkout, the scenario's TZC_TIERZERO,
# the work folder and the current folder are shared with the simulated hosts wherever they are, /tmp
# included (tzc_bind_back).
tzc_begin() {
  local name=$1
  TZC_DEADLINE=$2
  export TZC_ID=$$ TZC_STATE=$TZC_ROOT/$$
  local parent=${TZC_WORK_DIR:-$PWD}
  mkdir -p "$parent/cluster-work" && TZC_WORK=$(mktemp -d "$parent/cluster-work/$name.XXXXXX") ||
    tzc_fail "cannot create a work folder under $parent"
  TZC_WORK=$(realpath "$TZC_WORK")
  trap tzc_teardown EXIT
  trap 'tzc_on_signal TERM' TERM
  trap 'tzc_on_signal INT' INT
  trap 'tzc_on_signal HUP' HUP
  tzc_start_watchdog "$TZC_DEADLINE"
  if [ "$(id -u)" = 0 ]; then
    mkdir -p "$TZC_ROOT" 2>/dev/null && tzc_sweep
    # Made under a hidden name with its owner, then renamed: another run's sweep never sees it ownerless.
    local tmp=$TZC_ROOT/.new-$$
    mkdir -m 755 "$tmp" 2>/dev/null && chmod 755 "$TZC_ROOT" && echo "$$ $(tzc_proc_start $$)" >"$tmp/owner" &&
      mv -T "$tmp" "$TZC_STATE" || { rm -rf "$tmp"; tzc_skip "cannot create $TZC_STATE (root without the rights to /run?)"; }
  fi
  # The scenario is a world of its own: a launcher's variables from outside (a CI job that runs inside a
  # Slurm allocation, say) would make its srun join that job, and its reference run a rank of it.
  # shellcheck disable=SC2046 # variable names
  unset $(compgen -e | grep -E '^(SLURM_|SLURMD_|PMIX_|PMI_|OMPI_COMM_WORLD_)') SLURM_CONF
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # = mpirun --allow-run-as-root
  export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive  # one OpenMP thread per rank: ranks share 2 cores
  # The current folder too: the ranks and job steps start in it (mpirun's, sbatch's working folder).
  tzc_bind_back "$TZC_HERE/../../.." ${TZC_TIERZERO:+"$TZC_TIERZERO"} "$TZC_WORK" "$PWD"
  tzc_log "$name: run tzc$TZC_ID, work folder $TZC_WORK"
}

# -- the two simulated hosts --
# node0 (10.200.0.1) and node1 (10.200.0.2), each a network namespace with its end of one veth pair,
# named tz0 on both, and loopback. A skip if this machine does not permit network namespaces or the
# mount and UTS namespaces node_exec.sh needs (an unprivileged container).
tzc_netns_up() {
  local err n
  err=$(ip netns add "tzc$TZC_ID-node0" 2>&1) ||
    tzc_skip "network namespaces are not permitted here (ip netns add: $err)"
  ip netns add "tzc$TZC_ID-node1" || tzc_fail "ip netns add tzc$TZC_ID-node1"
  err=$(ip link add "tzc${TZC_ID}a" type veth peer name "tzc${TZC_ID}b" 2>&1) ||
    tzc_skip "veth pairs are not permitted here (ip link add type veth: $err)"
  printf '127.0.0.1 localhost\n10.200.0.1 node0\n10.200.0.2 node1\n' >"$TZC_STATE/hosts"
  for n in 0 1; do
    local ns=tzc$TZC_ID-node$n end=tzc${TZC_ID}a
    [ $n = 1 ] && end=tzc${TZC_ID}b
    ip link set "$end" netns "$ns" && ip -n "$ns" link set "$end" name tz0 &&
      ip -n "$ns" addr add "10.200.0.$((n + 1))/24" dev tz0 &&
      ip -n "$ns" link set tz0 up && ip -n "$ns" link set lo up || tzc_fail "setting up node$n's network"
  done
  err=$(TZC_BIND_BACK="" "$TZC_NODE" node1 getent hosts node0 2>&1) ||
    tzc_skip "a simulated host cannot be entered here (node_exec.sh: unshare --uts --mount, tmpfs and bind mounts): $err"
  # Now with the bind-backs: a failure here is the test's, not the machine's.
  err=$("$TZC_NODE" node1 sh -c 'for f; do [ -e "$f" ] || { echo "$f is missing"; exit 1; }; done' - \
          "$TZC_HERE/node_exec.sh" "$TZC_WORK" ${TZC_TIERZERO:+"$TZC_TIERZERO"} 2>&1) ||
    tzc_fail "node1 does not see this run's files ($err; TZC_BIND_BACK: $(echo $TZC_BIND_BACK))"
  tzc_log "simulated hosts up: node0 10.200.0.1, node1 10.200.0.2 (veth tz0)"
}
tzc_rx_bytes() {  # tzc_rx_bytes NODE : bytes received so far on NODE's end of the veth
  ip -n "tzc$TZC_ID-$1" -j -s link show tz0 | grep -o '"rx":{"bytes":[0-9]*' | grep -o '[0-9]*$'
}

# -- Slurm on the simulated hosts --
# munged (a key of this run's own, its socket in the state folder), slurmctld on node0 and slurmd on
# each of NODES, all with this run's slurm.conf (SLURM_CONF: nothing under /etc is written). Slurm's
# clients (srun, sbatch, squeue) must run on a node, through "$TZC_NODE": slurmctld listens on node0's
# veth address, and slurmd connects back to srun.
tzc_slurm_up() {  # tzc_slurm_up NODE... (node0 first)
  local s=$TZC_STATE n i
  # munged checks that every folder above its socket is searchable by all.
  mkdir -p "$s/munge" "$s/log" "$s/spool/slurmctld" && chmod 755 "$s/munge" && chown munge:munge "$s/munge" ||
    tzc_fail "cannot create $s/munge"
  runuser -u munge -- mungekey --create --keyfile="$s/munge/munge.key" --bits=1024 || tzc_fail "mungekey"
  # In node0's namespace, so that the teardown ends it with the rest.
  nsenter --net="/run/netns/tzc$TZC_ID-node0" runuser -u munge -- munged --socket="$s/munge/munge.socket" \
    --key-file="$s/munge/munge.key" --pid-file="$s/munge/munged.pid" --log-file="$s/munge/munged.log" \
    --seed-file="$s/munge/munged.seed" </dev/null >/dev/null 2>&1 || tzc_fail "munged did not start: $(tail -n 3 "$s/munge/munged.log")"
  cat >"$s/slurm.conf" <<EOF
# Slurm for the cluster test run tzc$TZC_ID (tests/launch/cluster/cluster_lib.sh)
ClusterName=tzc$TZC_ID
SlurmctldHost=node0(10.200.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$s/munge/munge.socket
MpiDefault=pmix
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmdParameters=config_overrides
StateSaveLocation=$s/spool/slurmctld
SlurmdSpoolDir=$s/spool/slurmd-%n
SlurmctldPidFile=$s/slurmctld.pid
SlurmdPidFile=$s/slurmd-%n.pid
SlurmctldLogFile=$s/log/slurmctld.log
SlurmdLogFile=$s/log/slurmd-%n.log
EOF
  for n; do
    mkdir -p "$s/spool/slurmd-$n"
    echo "NodeName=$n NodeAddr=10.200.0.$((${n#node} + 1)) CPUs=4 RealMemory=1000 State=UNKNOWN" >>"$s/slurm.conf"
  done
  echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >>"$s/slurm.conf"
  export SLURM_CONF=$s/slurm.conf
  "$TZC_NODE" node0 slurmctld </dev/null >/dev/null 2>&1 || tzc_fail "slurmctld did not start"
  for n; do
    "$TZC_NODE" "$n" slurmd </dev/null >/dev/null 2>&1 || tzc_fail "slurmd on $n did not start"
  done
  for i in $(seq 150); do  # up to 30 s until every node is idle
    [ "$("$TZC_NODE" node0 sinfo -h -N -o %t 2>/dev/null | grep -c '^idle')" = $# ] && break
    ((i == 150)) && { "$TZC_NODE" node0 sinfo -N; tzc_fail "the Slurm nodes did not become idle within 30 s"; }
    sleep 0.2
  done
  "$TZC_NODE" node0 srun --mpi=list 2>&1 | grep -qw pmix ||
    tzc_skip "Slurm's PMIx plugin is missing (srun --mpi=list has no pmix; Debian: slurm-wlm-basic-plugins)"
  tzc_log "Slurm up: slurmctld on node0, slurmd on $*, all idle (SLURM_CONF=$SLURM_CONF)"
}

# -- the runs --
# tzc_expect_losses WHAT METRICS FLAG... : the run's METRICS must match those of one process without a
# launcher (rank 0 of 1, no MPI), `TIERZERO FLAG... --metrics <METRICS less .jsonl>.reference.jsonl`,
# FLAG... being the scenario's flags with its global batch (ranks x micro-batch) as the micro-batch.
# Prints the PASS line, or both loss columns and FAIL.
tzc_expect_losses() {
  local what=$1 metrics=$2 out ref=${2%.jsonl}.reference
  shift 2
  tzc_run 30 "$TZC_TIERZERO" "$@" --metrics "$ref.jsonl" >"$ref.log" 2>&1 ||
    tzc_fail_log "$ref.log" "the one-process reference run exited with $?"
  out=$(bash "$TZC_HERE/compare_losses.sh" "$ref.jsonl" "$metrics" "$TZC_STEPS" 1e-5) ||
    { echo "$out"; tzc_fail "$what: the losses differ from those of one process with the same global batch"; }
  echo "PASS: $what, against one process with the same global batch: $out"
}
# tzc_show LOG : the start-up line and the last step's line of a run's output, for the test's log.
tzc_show() { grep -E '^([0-9]+: )?(model |step +[0-9]+/)' "$1" | sed -n '1p;$p' | sed 's/^/    /'; }
