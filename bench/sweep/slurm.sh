#!/bin/bash
# slurm.sh — a real Slurm run of examples/slurm/submit.sh on this one machine:
# a private munged, slurmctld and slurmd from a slurm.conf written into a
# temporary folder, tests/data/sweep/small.json in 4 shards as a job array,
# the dependent merge, the merged file compared with an unsharded run, the
# time of each shard from the job-completion log; then once more with shard 3
# made to fail, run again alone and merged as examples/slurm/README.md says.
# Everything it starts is stopped and the folder removed on exit, also on
# failure or Ctrl-C.
#
#   bench/sweep/slurm.sh [SIMTRAIN]        (default: build/simtrain)
#
# Needs the Debian packages slurm-wlm and munge (not part of .ci/setup: this
# is a benchmark, not a test), and root or a user who may run the daemons.
# Settings, from the environment: SHARDS (default 4), SPEC (default
# tests/data/sweep/small.json), SLURMCTLD_PORT / SLURMD_PORT (default
# 16817 / 16818, off Slurm's own 6817/6818 so a real installation is left
# alone), KEEP=1 to keep the folder for reading its logs.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
simtrain=${1:-$root/build/simtrain}
case $simtrain in /*) ;; *) simtrain=$PWD/$simtrain ;; esac
SHARDS=${SHARDS:-4}
SPEC=${SPEC:-$root/tests/data/sweep/small.json}
SLURMCTLD_PORT=${SLURMCTLD_PORT:-16817}
SLURMD_PORT=${SLURMD_PORT:-16818}
KEEP=${KEEP:-0}

for c in munged mungekey slurmctld slurmd sbatch squeue sinfo scontrol; do
  command -v "$c" >/dev/null || PATH=$PATH:/usr/sbin
  command -v "$c" >/dev/null || { echo "slurm.sh: '$c' not found (Debian: slurm-wlm, munge)" >&2; exit 1; }
done
[ -x "$simtrain" ] || { echo "slurm.sh: no simtrain at '$simtrain' (build it first)" >&2; exit 1; }

dir=$(mktemp -d /tmp/simtrain-slurm.XXXXXX)
chmod 755 "$dir"
pids=()
# The job steps' slurmstepd outlive slurmd: the jobs are cancelled while the
# daemons still run, then the daemons stopped, then any slurmstepd that still
# holds a file of this folder (its log) is stopped by its pid.
stop() { # PID...: TERM, up to 5 s, then KILL
  local p
  for p in "$@"; do kill -TERM "$p" 2>/dev/null; done
  for p in "$@"; do
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
    kill -KILL "$p" 2>/dev/null
  done
}
cleanup() {
  local rc=$? p f steps=()
  set +e
  if [ ${#pids[@]} -ge 3 ]; then
    scancel --quiet --user="$(id -un)" 2>/dev/null
    for _ in $(seq 20); do squeue -h 2>/dev/null | grep -q . || break; sleep 0.5; done
  fi
  stop "${pids[@]}"
  for p in $(pgrep -x slurmstepd); do
    for f in "/proc/$p/fd/"*; do
      case $(readlink "$f") in "$dir"/*) steps+=("$p"); break ;; esac
    done
  done
  [ ${#steps[@]} -gt 0 ] && stop "${steps[@]}"
  if [ "$KEEP" = 1 ]; then echo "slurm.sh: kept '$dir'" >&2; else rm -rf "$dir"; fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

host=$(hostname -s)
mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/log" "$dir/out"
chmod 700 "$dir/munge"

# ---- munge: its own key and socket ------------------------------------------------
mungekey --create --keyfile="$dir/munge/munge.key" --force
chmod 400 "$dir/munge/munge.key"
munged --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
  --seed-file="$dir/munge/munge.seed" --force
for _ in $(seq 50); do [ -s "$dir/munge/munged.pid" ] && break; sleep 0.1; done
pids+=("$(cat "$dir/munge/munged.pid")")
echo "slurm.sh: munged running (pid ${pids[0]})" >&2

# ---- slurm.conf: one node, this machine ---------------------------------------------
node=$(slurmd -C | head -1) # NodeName=... CPUs=... RealMemory=...: what slurmd will find
cat >"$dir/slurm.conf" <<CONF
ClusterName=simtrain-bench
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$SLURMCTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=$(id -un)
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ReturnToService=2
MinJobAge=600
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=bench Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
sed -i 's/ UpTime=[^ ]*//' "$dir/slurm.conf"
export SLURM_CONF=$dir/slurm.conf

slurmctld -f "$SLURM_CONF" -i
for _ in $(seq 100); do [ -s "$dir/slurmctld.pid" ] && break; sleep 0.1; done
pids+=("$(cat "$dir/slurmctld.pid")")
slurmd -f "$SLURM_CONF" -N "$host"
for _ in $(seq 100); do [ -s "$dir/slurmd.pid" ] && break; sleep 0.1; done
pids+=("$(cat "$dir/slurmd.pid")")
echo "slurm.sh: slurmctld (pid ${pids[1]}) and slurmd (pid ${pids[2]}) running" >&2

state=""
for _ in $(seq 60); do
  state=$(sinfo -h -n "$host" -o %t 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 1
done
if [ "$state" != idle ]; then
  echo "slurm.sh: node '$host' is '$state', not idle, after 60 s; the logs:" >&2
  tail -20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2
  exit 1
fi
sinfo

# Waits for an array and its merge: prints the merge's state when it is over,
# DependencyNeverSatisfied when a shard failed (the merge then waits for
# ever), or TIMEOUT after 600 s.
wait_jobs() {
  local r
  for _ in $(seq 1200); do
    squeue -h -j "$1,$2" 2>/dev/null | grep -q . || {
      scontrol show job "$2" | grep -o 'JobState=[A-Z_]*' | cut -d= -f2
      return
    }
    r=$(squeue -h -j "$2" -o %r 2>/dev/null || true)
    if [ "$r" = DependencyNeverSatisfied ] && ! squeue -h -j "$1" | grep -q .; then
      echo "$r"
      return
    fi
    sleep 0.5
  done
  echo TIMEOUT
}
submit() { # SIMTRAIN: prints array_job=... merge_job=...
  SIMTRAIN=$1 CPUS_PER_TASK=1 TIME_LIMIT=00:10:00 \
    bash "$root/examples/slurm/submit.sh" "$SPEC" "$SHARDS" "$dir/out" 2>/dev/null
}
jobs_table() { # squeue, indented
  squeue -o "%.8i %.15j %.9T %.30R" | sed 's/^/  /'
}

# ---- the sweep ------------------------------------------------------------------------
w0=$(date +%s.%N)
"$simtrain" sweep "$SPEC" -o "$dir/whole.h5" --quiet >/dev/null || true
w1=$(date +%s.%N)
t0=$(date +%s.%N)
ids=$(submit "$simtrain")
echo "$ids"
array=$(sed -n 's/^array_job=//p' <<<"$ids")
merge=$(sed -n 's/^merge_job=//p' <<<"$ids")
jobs_table
mstate=$(wait_jobs "$array" "$merge")
t1=$(date +%s.%N)
if [ "$mstate" != COMPLETED ]; then
  echo "slurm.sh: the merge job $merge is $mstate; the logs:" >&2
  tail -n +1 "$dir/out/logs/"*.out >&2
  exit 1
fi
if cmp "$dir/out/sweep.h5" "$dir/whole.h5"; then
  echo "merged file = unsharded sweep, byte for byte"
else
  echo "slurm.sh: the merged file differs from the unsharded sweep" >&2
  exit 1
fi

# ---- timings: Slurm's job-completion log, and each shard's own clock ------------------------
echo
timings() { # FIRST_JOBID: one line per job from it on
  local line s e id jid task own wall
  printf '%-8s %-15s %-10s %-20s %-20s %6s %8s\n' job name state start end wall_s shard_s
  while read -r line; do
    jid=$(field JobId "$line") id=$jid task=$(field ArrayTaskId "$line") own="-"
    [ -n "$task" ] && id="$(field ArrayJobId "$line")_$task"
    [ "${id%_*}" -ge "$1" ] || continue
    [ -n "$task" ] && own=$(cat "$dir/out/logs/"*.out 2>/dev/null |
      sed -n "s/^sweep.sbatch: shard .* (job $jid) finished with status .* in \([0-9.]*\) s$/\1/p")
    s=$(field StartTime "$line") e=$(field EndTime "$line")
    wall=$(($(date -d "$e" +%s 2>/dev/null || echo 0) - $(date -d "$s" +%s 2>/dev/null || echo 0)))
    printf '%-8s %-15s %-10s %-20s %-20s %6d %8s\n' "$id" "$(field Name "$line")" \
      "$(field JobState "$line")" "$s" "$e" "$wall" "${own:--}"
  done <"$dir/log/jobcomp.txt" | sort -k1,1V
}
field() { grep -o " $1=[^ ]*" <<<" $2" | head -1 | cut -d= -f2- || true; }
timings "$array"
grep -h 'point(s) failed' "$dir/out/logs/"shard-*.out || true
awk -v a="$t0" -v b="$t1" -v c="$w0" -v d="$w1" \
  'BEGIN { printf "submitted to merged: %.1f s; the same sweep unsharded, one point at a time: %.1f s\n", b - a, d - c }'

# ---- a shard that fails, run again alone (examples/slurm/README.md) -----------------------
# a simtrain that fails shard 3 with exit 3 and runs the others
cat >"$dir/flaky" <<FLAKY
#!/bin/bash
case "\$*" in *"--shard 3/"*) echo "simtrain: error: shard 3 made to fail" >&2; exit 3 ;; esac
exec "$simtrain" "\$@"
FLAKY
chmod +x "$dir/flaky"
rm -rf "$dir/out"
echo
echo "shard 3 made to fail:"
ids=$(submit "$dir/flaky")
array=$(sed -n 's/^array_job=//p' <<<"$ids")
first=$array
merge=$(sed -n 's/^merge_job=//p' <<<"$ids")
mstate=$(wait_jobs "$array" "$merge")
jobs_table
if [ "$mstate" != DependencyNeverSatisfied ]; then
  echo "slurm.sh: with shard 3 failed the merge is '$mstate', not waiting on a failed dependency" >&2
  exit 1
fi
grep -h "finished with status\|error" "$dir/out/logs/shard-3.out" | sed 's/^/  /'
# the README's recipe: the shard again, the old merge cancelled, a new merge after it
scancel "$merge"
again=$(SIMTRAIN=$simtrain sbatch --parsable --array=3 --output="$dir/out/logs/shard-%a.rerun.out" \
  "$root/examples/slurm/sweep.sbatch" "$SPEC" "$SHARDS" "$dir/out")
merge=$(SIMTRAIN=$simtrain sbatch --parsable --dependency=afterok:"$again" \
  --output="$dir/out/logs/merge.out" "$root/examples/slurm/merge.sbatch" "$dir/out" "$SHARDS")
echo "shard 3 again: job $again, merge: job $merge"
mstate=$(wait_jobs "$again" "$merge")
if [ "$mstate" != COMPLETED ]; then
  echo "slurm.sh: the second merge job $merge is $mstate" >&2
  tail -n +1 "$dir/out/logs/"*.out >&2
  exit 1
fi
if cmp "$dir/out/sweep.h5" "$dir/whole.h5"; then
  echo "merged after the rerun = unsharded sweep, byte for byte"
  echo
  timings "$first"
else
  echo "slurm.sh: the merge after the rerun differs from the unsharded sweep" >&2
  exit 1
fi
