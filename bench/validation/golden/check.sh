#!/bin/bash
# check.sh — the validation set's predictions (`simtrain validate --json`)
# against predictions.json, byte for byte: a pin of every published case
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
"$simtrain" validate "$here/.." --json -j "$jobs" >"$got" || exit 1
if [ $write -eq 1 ]; then
  cp "$got" "$here/predictions.json"
  echo "wrote $here/predictions.json"
elif cmp -s "$got" "$here/predictions.json"; then
  echo "validation set: every prediction as pinned"
else
  echo "validation set: predictions moved:"
  diff <(tr '{' '\n' <"$here/predictions.json") <(tr '{' '\n' <"$got")
  exit 1
fi
