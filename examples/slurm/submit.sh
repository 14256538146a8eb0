#!/bin/bash
# submit.sh — a simtrain sweep as a Slurm job array of N shards plus one
# merge job that runs when every shard has succeeded.
#
#   examples/slurm/submit.sh SPEC N OUTDIR
#
# Prints the two job ids (array_job=..., merge_job=...).  Shard I is written
# to OUTDIR/shard-I.h5, the merged sweep to OUTDIR/sweep.h5, the logs to
# OUTDIR/logs/.  OUTDIR must be on a file system every node sees.
#
# Settings, from the environment:
#   SIMTRAIN       the simtrain binary, at the same path on every node
#                  (default: `simtrain` found on PATH here)
#   PARTITION      the partition (default: the cluster's default partition)
#   TIME_LIMIT     time limit of one shard task (default 01:00:00)
#   CPUS_PER_TASK  CPUs of one shard task = points it simulates at once
#                  (default 1)
#   MERGE_TIME     time limit of the merge job (default 00:10:00)
#   SBATCH_EXTRA   more sbatch options for both jobs, split on spaces
#                  (e.g. "--account=proj --qos=short")
set -euo pipefail

SIMTRAIN=${SIMTRAIN:-simtrain}
PARTITION=${PARTITION:-}
TIME_LIMIT=${TIME_LIMIT:-01:00:00}
CPUS_PER_TASK=${CPUS_PER_TASK:-1}
MERGE_TIME=${MERGE_TIME:-00:10:00}
SBATCH_EXTRA=${SBATCH_EXTRA:-}

if [ $# -ne 3 ]; then
  echo "usage: submit.sh SPEC N OUTDIR" >&2
  exit 1
fi
spec=$1 shards=$2 outdir=$3
here=$(cd "$(dirname "$0")" && pwd)
case $shards in '' | *[!0-9]* | 0) echo "submit.sh: N '$shards' is not a positive number" >&2; exit 1 ;; esac
[ -f "$spec" ] || { echo "submit.sh: spec '$spec' not found" >&2; exit 2; }
bin=$(command -v "$SIMTRAIN") || { echo "submit.sh: simtrain binary '$SIMTRAIN' not found" >&2; exit 1; }

# absolute paths: the jobs may start in another directory on another node
spec=$(cd "$(dirname "$spec")" && pwd)/$(basename "$spec")
case $bin in /*) ;; *) bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin") ;; esac
mkdir -p "$outdir/logs"
outdir=$(cd "$outdir" && pwd)

# the spec is read here first: a bad spec fails now, not in N tasks
"$bin" sweep "$spec" --plan --shard 1/"$shards" >"$outdir/logs/plan.txt"

opts=()
[ -n "$PARTITION" ] && opts+=(--partition="$PARTITION")
# shellcheck disable=SC2206 # split on purpose
[ -n "$SBATCH_EXTRA" ] && opts+=($SBATCH_EXTRA)
export SIMTRAIN=$bin

array=$(sbatch --parsable "${opts[@]}" --array=1-"$shards" --time="$TIME_LIMIT" \
  --cpus-per-task="$CPUS_PER_TASK" --output="$outdir/logs/shard-%a.out" \
  "$here/sweep.sbatch" "$spec" "$shards" "$outdir")
array=${array%%;*} # "jobid;cluster" on a multi-cluster setup
merge=$(sbatch --parsable "${opts[@]}" --dependency=afterok:"$array" --time="$MERGE_TIME" \
  --output="$outdir/logs/merge.out" "$here/merge.sbatch" "$outdir" "$shards")
merge=${merge%%;*}

echo "array_job=$array"
echo "merge_job=$merge"
echo "submit.sh: $shards shards of '$spec' (plan in $outdir/logs/plan.txt); merged sweep: $outdir/sweep.h5" >&2
