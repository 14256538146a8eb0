#!/bin/bash
# check.sh — the validation set's predictions (`simtrain validate --json`)
# against predictions.json, the holdout rows' (../holdout) against
# holdout.json, the MoE runs' (../moe) against moe.json, the runs kept for
# their published peak memory (../memory) against memory.json and the
# AsyncTP pairs (../asynctp) against asynctp.json, byte for byte:
# a pin of every published case
# (ctest's validation_pins; about 2.5 CPU-minutes, was 30 before rank
# classes covered the large cases).  A change that means to move a
# prediction rewrites the file (--write) and says why in its commit.
#   bench/validation/golden/check.sh [SIMTRAIN] [-j N] [--write]
set -u
here=$(cd "$(dirname "$0")" && pwd)
simtrain=${1:-$here/../../../build/simtrain}
shift || true
jobs=2 write=0
while [ $# -gt 0 ]; do
  case $1 in
  -j) jobs=$2; shift 2 ;;
  --write) write=1; shift ;;
  *) echo "check.sh: unknown argument '$1'" >&2; exit 1 ;;
  esac
done
got=$(mktemp)
trap 'rm -f "$got"' EXIT
rc=0
# the set, the rows of the same tables kept outside it (../holdout), the MoE runs
# (../moe), the runs kept for their memory readings (../memory), the AsyncTP
# pairs (../asynctp)
for pair in "..:predictions.json:validation set" "../holdout:holdout.json:holdout rows" \
  "../moe:moe.json:MoE runs" "../memory:memory.json:memory runs" \
  "../asynctp:asynctp.json:AsyncTP pairs"; do
  dir=${pair%%:*} rest=${pair#*:}
  file=${rest%%:*} what=${rest#*:}
  "$simtrain" validate "$here/$dir" --json -j "$jobs" >"$got" || exit 1
  if [ $write -eq 1 ]; then
    cp "$got" "$here/$file"
    echo "wrote $here/$file"
  elif cmp -s "$got" "$here/$file"; then
    echo "$what: every prediction as pinned"
  else
    echo "$what: predictions moved:"
    diff <(tr '{' '\n' <"$here/$file") <(tr '{' '\n' <"$got")
    rc=1
  fi
done
exit $rc
