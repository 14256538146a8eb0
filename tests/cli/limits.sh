#!/bin/bash
# Size limits (docs/workload-format.md, "Limits"): what a few bytes of input
# may ask for is refused before anything is allocated for it, and what is
# within the limits is built in time linear in its size.
# usage: limits.sh <simtrain> <shared-dir>
set -u
ST=$1
fail() { echo "FAIL: $*"; exit 1; }
D="$(cd "$(dirname "$0")/../data" && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A 3-line ASTRA workload over the largest allowed GPU count (2^20, tp 8:
# 131,072 DP groups of 8 and 8 of 131,072): built in linear time (a filter
# over the stage per group was quadratic and never ended).
out=$(timeout 120 "$ST" import astra:"$D"/bad/astra_3line.txt --gpus 1048576 -o "$tmp/a.json.gz" 2>&1) ||
  fail "import of 1048576 GPUs: $out"
grep -q '^imported astra:.*: 1048576 ranks, 1 programs' <<<"$out" || fail "import: $out"
echo ok
