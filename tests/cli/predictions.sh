#!/bin/bash
# predictions.sh — every run of tests/data/golden/predictions.cases prints
# exactly the line of predictions.jsonl it printed when the file was written:
# a pin, not a proof (the proofs are the closed-form tests), so that any
# change to a prediction shows in review.  With --write as the third
# argument it rewrites the expected file instead.
set -u
simtrain=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cases=$root/tests/data/golden/predictions.cases
expected=$root/tests/data/golden/predictions.jsonl
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root" || exit 1
n=0
while IFS= read -r line; do
  case $line in '#'* | '') continue ;; esac
  n=$((n + 1))
  # shellcheck disable=SC2086  # the line is the argument list
  out=$("$simtrain" run $line --quiet 2>"$tmp/err"); rc=$?
  if [ $rc -ne 0 ]; then
    echo "FAIL: run $line: exit $rc: $(cat "$tmp/err")"
    exit 1
  fi
  # the wall time of the run itself is the one number that is not a prediction
  printf '%s\n' "$out" | sed 's/"sim_wall_s":[^,]*,//' >>"$tmp/got"
done <"$cases"
if [ "${3:-}" = --write ]; then
  cp "$tmp/got" "$expected"
  echo "predictions: wrote $n runs to $expected"
  exit 0
fi
if ! diff -u "$expected" "$tmp/got" >"$tmp/diff"; then
  echo "FAIL: predictions moved (- pinned, + now):"
  cat "$tmp/diff"
  exit 1
fi
echo "predictions: $n runs as pinned"
