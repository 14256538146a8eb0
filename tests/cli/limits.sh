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

# A host execution trace of 100,000 collectives (10 MB) is read in linear
# time: its nodes were taken by index from cJSON's list (quadratic: over a
# minute), now walked once and sorted.
mkdir -p "$tmp/et"
awk 'BEGIN { printf "{\"schema\": \"1.0.1\", \"pid\": 59811, \"nodes\": [\n";
  for (i = 0; i < 100000; i++) { if (i) printf ",\n";
    printf "{\"name\": \"record_param_comms\", \"id\": %d, \"inputs\": [[5,6,0,1024,4,\"cuda:0\"], 0, 0, \"allreduce\", [], []]}", i }
  printf "]}\n" }' >"$tmp/et/rank0_et.json"
err=$(timeout 30 "$ST" run --trace kineto:"$D"/fuzz/et_kineto_rank0.json --et "$tmp/et" --cluster node8 2>&1); rc=$?
[ $rc -eq 2 ] || fail "ET of 100000 collectives: exit $rc (124: too slow): $err"
grep -q "has 100000 collectives but ProfilerStep#3 has 2 NCCL kernels" <<<"$err" || fail "ET: $err"
rm -rf "$tmp/et"

# --max-memory: a cluster within the limits whose SimGrid platform needs
# more than the limit ends with one line and exit 2 (as out of memory), not
# with the kernel's OOM killer; any command takes it, anywhere on the line.
EX="$(cd "$(dirname "$0")/../../examples" && pwd)/pipeline2.json"
err=$(timeout 120 "$ST" run --workload "$EX" --cluster dgx-h100:131072 --max-memory 256M -o "$tmp/r.h5" 2>&1 >/dev/null)
rc=$?
[ $rc -eq 2 ] || fail "--max-memory 256M on 1048576 GPUs: exit $rc: $err"
[ "$err" = "simtrain: error: out of memory: resident memory passed --max-memory 256.00 MiB" ] ||
  fail "--max-memory message: $err"
[ -z "$(ls "$tmp" | grep -v '^a.json.gz$')" ] || fail "--max-memory left: $(ls "$tmp")"
out=$("$ST" --max-memory=1G run --workload "$EX" --cluster node8 --json 2>&1) || fail "--max-memory=1G before the command: $out"
err=$("$ST" run --max-memory 10 --workload "$EX" --cluster node8 2>&1); rc=$?
[ $rc -eq 1 ] && [ "$err" = "simtrain: error: --max-memory '10' is not a size of at least 1M (4G, 512M)" ] ||
  fail "--max-memory 10: exit $rc: $err"
echo ok
