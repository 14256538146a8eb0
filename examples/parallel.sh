#!/bin/bash
# parallel.sh — a simtrain sweep split into N shards run by GNU parallel, on
# this machine or over ssh on other hosts, then merged.
#
#   examples/parallel.sh SPEC N OUTDIR [HOSTS]
#
# Shard I is written to OUTDIR/shard-I.h5, the merged sweep to
# OUTDIR/sweep.h5 (the same bytes as one unsharded `simtrain sweep -o`),
# parallel's job log (host, start, run time, status per shard) to
# OUTDIR/joblog.
#
# Without HOSTS the N shards run here, all at once (`parallel -j N`).  HOSTS
# is a file of ssh logins, one a line (parallel --sshloginfile: "host",
# "user@host", "4/host" for 4 shards at once there, ":" for this machine), or
# a comma-separated list of them (parallel -S).  By default the hosts must
# have simtrain at the path SIMTRAIN names and see SPEC and OUTDIR at the same
# paths (a shared file system).  With TRANSFER=1 they need only simtrain:
# the spec is sent to each host and the shard file brought back (parallel
# --transferfile/--return/--cleanup, which need rsync on both sides); a spec
# that names cluster files by relative path needs them there too.
#
# A shard whose points partly failed (simtrain exit 64..127, the file still
# written) counts as done and is logged; any other failure stops before the
# merge, and the shard can be run again alone (see the message printed).
#
# Settings, from the environment:
#   SIMTRAIN       the simtrain binary (default: `simtrain` on PATH)
#   POINT_JOBS     points a shard simulates at once (sweep -j; default 1)
#   JOBS_PER_HOST  shards at once on each host when HOSTS is given (default 1;
#                  "4/host" in the file overrides it per host)
#   TRANSFER       1: send the spec and bring the shards back (see above)
set -euo pipefail

SIMTRAIN=${SIMTRAIN:-simtrain}
POINT_JOBS=${POINT_JOBS:-1}
JOBS_PER_HOST=${JOBS_PER_HOST:-1}
TRANSFER=${TRANSFER:-0}

if [ $# -lt 3 ] || [ $# -gt 4 ]; then
  echo "usage: parallel.sh SPEC N OUTDIR [HOSTS]" >&2
  exit 1
fi
spec=$1 shards=$2 outdir=$3 hosts=${4:-}
case $shards in '' | *[!0-9]* | 0) echo "parallel.sh: N '$shards' is not a positive number" >&2; exit 1 ;; esac
command -v parallel >/dev/null || { echo "parallel.sh: GNU parallel is not installed" >&2; exit 1; }
[ -f "$spec" ] || { echo "parallel.sh: spec '$spec' not found" >&2; exit 2; }
# 126 and 127 are also the shell's "cannot execute" and "not found", inside
# the range of failed points: the binary must be there (here, at least).
bin=$(command -v "$SIMTRAIN") || { echo "parallel.sh: simtrain binary '$SIMTRAIN' not found" >&2; exit 1; }
case $bin in /*) ;; *) bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin") ;; esac
spec=$(cd "$(dirname "$spec")" && pwd)/$(basename "$spec")
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
rm -f "$outdir/joblog"

# One shard, as a POSIX shell command line (a remote login shell runs it):
# {} is the shard number.  64..127 with the shard file written -> 0, logged.
q() { printf '%q' "$1"; }
if [ "$TRANSFER" = 1 ]; then
  # relative names: parallel sends ./spec.json and brings ./shard-I.h5 back
  cp "$spec" "$outdir/spec.json"
  in=spec.json out=shard-{}.h5
else
  in=$(q "$spec") out=$(q "$outdir")/shard-{}.h5
fi
job="rm -f $out; $(q "$bin") sweep $in --shard {}/$shards -o $out -j $POINT_JOBS --quiet >/dev/null; rc=\$?;"
job="$job if [ \$rc -ge 64 ] && [ \$rc -le 127 ] && [ -f $out ]; then"
job="$job echo \"shard {}/$shards: \$((rc - 64)) point(s) failed, file written\" >&2; rc=0; fi; exit \$rc"

args=(--joblog "$outdir/joblog" --tag --line-buffer)
if [ -z "$hosts" ]; then
  args+=(-j "$shards")
else
  if [ -f "$hosts" ]; then args+=(--sshloginfile "$hosts"); else args+=(-S "$hosts"); fi
  args+=(-j "$JOBS_PER_HOST")
  if [ "$TRANSFER" = 1 ]; then
    args+=(--workdir ... --transferfile spec.json --return "shard-{}.h5" --cleanup)
  fi
fi

echo "parallel.sh: $shards shards of '$spec' into '$outdir'" >&2
rc=0
(cd "$outdir" && parallel "${args[@]}" "$job" ::: $(seq 1 "$shards")) || rc=$?
if [ $rc -ne 0 ]; then
  failed=$(awk -F'\t' 'NR > 1 && $7 != 0 {print $1}' "$outdir/joblog" | sort -n | paste -sd' ')
  echo "parallel.sh: $rc shard(s) failed (${failed:-see above}); nothing merged." >&2
  echo "parallel.sh: run one again with: $bin sweep '$spec' --shard I/$shards -o '$outdir/shard-I.h5'," >&2
  echo "parallel.sh: then: $bin merge '$outdir/sweep.h5' '$outdir'/shard-*.h5" >&2
  exit 1
fi

files=()
for i in $(seq 1 "$shards"); do files+=("$outdir/shard-$i.h5"); done
"$bin" merge "$outdir/sweep.h5" "${files[@]}" --quiet
# the job log: per shard, the host and the wall time
awk -F'\t' 'NR > 1 {printf "parallel.sh: shard %s on %s: %.1f s, exit %s\n", $1, ($2 == ":" ? "localhost" : $2), $4, $7}' \
  "$outdir/joblog" | sort -t' ' -k3,3n >&2
echo "parallel.sh: wrote '$outdir/sweep.h5' ($shards shards merged)" >&2
