#!/bin/bash
# coll.sh — `simtrain coll --ideal` (links at line rate, no protocol
# overheads) against the alpha-beta closed form on node8 (route latency 1 us,
# 450e9 B/s per direction per GPU), its nccl-tests-style table and JSON, and
# its usage errors.
set -u
simtrain=$1
fails=0
check() { # name, condition
  if eval "$2"; then :; else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
# relative difference of two numbers below a tolerance
close() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = (a - b) / b; if (d < 0) d = -d; exit !(d <= t) }'; }

# all-gather of 64 MiB over 4 GPUs: (n-1) (lat + S/(n B)) = 3 (1e-6 + 67108864/1.8e12)
json=$("$simtrain" coll allgather --gpus 4 --cluster node8 --bytes 64M --json --ideal); rc=$?
check "coll --json exits 0" "[ $rc -eq 0 ]"
t=$(sed -n 's/.*"time_s":\([^,]*\),.*/\1/p' <<<"$json")
want=$(awk 'BEGIN { printf "%.12g", 3 * (1e-6 + 67108864 / (4 * 450e9)) }')
check "all-gather time is the closed form ($t vs $want)" "close '$t' '$want' 1e-6"
busbw=$(sed -n 's/.*"busbw_GBps":\([^,]*\),.*/\1/p' <<<"$json")
wantbus=$(awk -v t="$want" 'BEGIN { printf "%.12g", 67108864 / t / 1e9 * 3 / 4 }')
check "busbw uses nccl-tests' (n-1)/n ($busbw vs $wantbus)" "close '$busbw' '$wantbus' 1e-6"
check "JSON keys" "grep -q '^\[{\"bytes\":67108864,\"time_s\":[0-9.e-]*,\"algbw_GBps\":[0-9.e-]*,\"busbw_GBps\":[0-9.e-]*,\"algo\":\"ring\",\"proto\":\"simple\",\"channels\":1}\]$' <<<\"\$json\""

# a sweep prints one line per size, doubling
out=$("$simtrain" coll allreduce --gpus 8 --cluster node8 --sweep 1M:8M --ideal); rc=$?
check "sweep exits 0" "[ $rc -eq 0 ]"
check "sweep has 4 sizes" "[ \$(grep -cv '^#' <<<\"\$out\") -eq 4 ]"
check "sweep header" "grep -q '^# *size(B) *count(float) *time(us) *algbw(GB/s) *busbw(GB/s) *algo *proto *channels$' <<<\"\$out\""
last=$(grep -v '^#' <<<"$out" | tail -1)
check "last size is 8 MiB" "[ \$(awk '{print \$1}' <<<\"\$last\") = 8388608 ]"

# sendrecv between neighbours: lat + S/B, busbw = algbw
json=$("$simtrain" coll sendrecv --gpus 2 --cluster node8 --bytes 1G --json --ideal); rc=$?
check "sendrecv exits 0" "[ $rc -eq 0 ]"
t=$(sed -n 's/.*"time_s":\([^,]*\),.*/\1/p' <<<"$json")
want=$(awk 'BEGIN { printf "%.12g", 1e-6 + 1073741824 / 450e9 }')
check "sendrecv time ($t vs $want)" "close '$t' '$want' 1e-6"

# the tuner's choice as printed: DGX H100 at 1 GiB takes NVLS (Simple, one
# set of flows), NVLink-bound at 450 GB/s x 0.824 (NVLink4 payload) x 0.85
# (nvlsEfficiency) x 8/9 (each GPU carries (k+1)/k S), after NCCL's 25 us and
# the 65 us pipeline fill; at 1 MiB the ring with LL; A100 (no NVLS) the ring
out=$("$simtrain" coll allreduce --gpus 8 --cluster dgx-h100:1 --bytes 1G); rc=$?
check "dgx-h100:1 1 GiB exits 0" "[ $rc -eq 0 ]"
row=$(grep -v '^#' <<<"$out")
check "dgx-h100:1 1 GiB prints nvls simple 1 ($row)" "[ \"\$(awk '{print \$6, \$7, \$8}' <<<\"\$row\")\" = 'nvls simple 1' ]"
t=$(awk '{print $3}' <<<"$row")
want=$(awk 'BEGIN { printf "%.6f", 90 + 1073741824 / (450e9 * 0.824 * 0.85 * 8 / 9) * 1e6 }')
check "dgx-h100:1 1 GiB time ($t vs $want us)" "close '$t' '$want' 1e-3"
row=$("$simtrain" coll allreduce --gpus 8 --cluster dgx-h100:1 --bytes 1M | grep -v '^#')
check "dgx-h100:1 1 MiB takes ring ll ($row)" "[ \"\$(awk '{print \$6, \$7}' <<<\"\$row\")\" = 'ring ll' ]"
row=$("$simtrain" coll allreduce --gpus 8 --cluster dgx-a100:1 --bytes 1G | grep -v '^#')
check "dgx-a100:1 1 GiB takes ring simple ($row)" "[ \"\$(awk '{print \$6, \$7}' <<<\"\$row\")\" = 'ring simple' ]"

# an MoE dispatch as DeepEP / HybridEP send it (--dedup TOPK:E), --ideal
# on one node of 8: each GPU sends its S/k tokens once to each peer holding
# any of a token's k experts (share 1 - C(E - e, k) / C(E, k), E = 8 e), so
# top-2 of 32 experts (4 a GPU): 7 (lat + S/2 (1 - 28 x 27 / (32 x 31)) / 8 / B)
# over the direct algorithm's seven steps, against 7 (lat + S / (8 B)) plain
json=$("$simtrain" coll alltoall --gpus 8 --cluster node8 --bytes 1G --json --ideal --dedup 2:4); rc=$?
check "alltoall --dedup exits 0" "[ $rc -eq 0 ]"
t=$(sed -n 's/.*"time_s":\([^,]*\),.*/\1/p' <<<"$json")
json=$("$simtrain" coll alltoall --gpus 8 --cluster node8 --bytes 1G --json --ideal)
t0=$(sed -n 's/.*"time_s":\([^,]*\),.*/\1/p' <<<"$json")
ratio=$(awk -v a="$t" -v b="$t0" 'BEGIN { printf "%.12g", a / b }')
want=$(awk 'BEGIN { printf "%.12g", 4 * (1 - 28 * 27 / (32 * 31)) }')
check "dedup / plain bandwidth terms ($ratio vs about $want)" "close '$ratio' '$want' 0.01"
err=$("$simtrain" coll allreduce --gpus 8 --cluster node8 --bytes 1M --dedup 2:4 2>&1 >/dev/null); rc=$?
check "--dedup on allreduce exits 1" "[ $rc -eq 1 ]"
check "--dedup on allreduce message" "[ \"\$err\" = \"simtrain: error: --dedup applies only to alltoall (see 'simtrain coll --help')\" ]"
err=$("$simtrain" coll alltoall --gpus 8 --cluster node8 --bytes 1M --dedup 2 2>&1 >/dev/null); rc=$?
check "--dedup without experts exits 1" "[ $rc -eq 1 ]"

err=$("$simtrain" coll allreduce --gpus 16 --cluster node8 --bytes 1M 2>&1 >/dev/null); rc=$?
check "too many GPUs exits 2" "[ $rc -eq 2 ]"
check "too many GPUs message" "[ \"\$err\" = \"simtrain: error: --gpus 16: cluster 'node8' has only 8 GPUs\" ]"
err=$("$simtrain" coll allsum --gpus 2 --cluster node8 2>&1 >/dev/null); rc=$?
check "unknown op exits 1" "[ $rc -eq 1 ]"
err=$("$simtrain" coll allreduce --gpus 2 --cluster node8 --bytes 12Q 2>&1 >/dev/null); rc=$?
check "bad size exits 1" "[ $rc -eq 1 ]"
check "bad size message" "[ \"\$err\" = \"simtrain: error: --bytes '12Q' is not a size like 4096, 64M or 1G (see 'simtrain coll --help')\" ]"

[ $fails -eq 0 ] && echo "coll: all checks passed"
exit $((fails > 0))
