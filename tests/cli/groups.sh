#!/bin/bash
# groups.sh — node groups (examples/clusters/mixed-a100-h100.json: 2 DGX H100
# nodes, GPUs 0-15, then 2 DGX A100 nodes, GPUs 16-31, on one fabric).
#
# The references are runs on the all-H100 and all-A100 clusters, which take
# no path through the groups:
#  - each rank's compute is priced on its own GPU, so the mean compute of
#    llama3-8b tp=8 dp=4 on the mixed cluster is the mean of the two pure
#    clusters' (16 ranks of each);
#  - its step ends with the A100 ranks: their compute, then the data-parallel
#    all-reduce, whose rail rings cross both kinds of node and run at what
#    all members share (the HDR NICs' 25 GB/s, A100 tuning), exactly as on an
#    all-A100 cluster; so the step time is the all-A100 cluster's.
. "$(dirname "$0")/../cli_lib.sh" "$@"
root=$(cd "$(dirname "$0")/../.." && pwd)
mixed=$root/examples/clusters/mixed-a100-h100.json
run_json() { "$simtrain" run --model llama3-8b --layout tp=8,dp=4,mbs=1,gbs=32 --cluster "$1" --json 2>"$tmp/err"; }
m=$(run_json "$mixed")
h=$(run_json dgx-h100:4)
a=$(run_json dgx-a100:4)
close() { awk -v x="$1" -v y="$2" -v t="$3" 'BEGIN { d = x - y; if (d < 0) d = -d; exit !(d <= t * (y < 0 ? -y : y)) }'; }
want=$(awk -v h="$(json_num "$h" compute_s)" -v a="$(json_num "$a" compute_s)" 'BEGIN { printf "%.12g", (h + a) / 2 }')
check "mean compute is the two pure clusters' mean ($(json_num "$m" compute_s) vs $want)" \
  "close '$(json_num "$m" compute_s)' '$want' 1e-9"
check "the step time is the all-A100 cluster's ($(json_num "$m" step_time_s) vs $(json_num "$a" step_time_s))" \
  "close '$(json_num "$m" step_time_s)' '$(json_num "$a" step_time_s)' 1e-9"
check "the H100 ranks wait for the A100 ranks (idle > 0)" \
  "awk 'BEGIN { exit !($(json_num "$m" idle_s) > 0.1) }'"
# MFU against the mean peak: (989.4 + 312) / 2 = 650.7 TFLOP/s bf16
mfu_want=$(awk -v t="$(json_num "$m" model_tflops_per_gpu)" 'BEGIN { printf "%.12g", t / 650.7 }')
check "MFU is against the mean of the GPUs' peaks" "close '$(json_num "$m" mfu)' '$mfu_want' 1e-9"

# the summary shows the groups
"$simtrain" platform "$mixed" >"$tmp/sum"
check "platform names both groups" "grep -q '^group h100     nodes 0-1, GPUs 0-15' '$tmp/sum' && grep -q '^group a100     nodes 2-3, GPUs 16-31' '$tmp/sum'"
check "each group's device and NICs" "grep -q '^  device       A100-SXM4-80GB' '$tmp/sum' && grep -q '^  nics         8 per node x 25 GB/s' '$tmp/sum'"

# memory per group: llama3-70b tp=8 pp=2 puts stage 0 on the H100 nodes and
# stage 1 on the A100 nodes; each is checked against its own device
"$simtrain" run --model llama3-70b --layout tp=8,pp=2,dp=2,mbs=1,gbs=8 --cluster "$mixed" >/dev/null 2>"$tmp/mem"
check "stage 0 is checked against the H100 group" "grep -q \"stage 0 needs .* one H100-SXM of group 'h100'\" '$tmp/mem'"
check "stage 1 against the A100 group" "grep -q \"stage 1 needs .* one A100-SXM4-80GB of group 'a100'\" '$tmp/mem'"

# simtrain memory: each stage against the devices its ranks are on (an A100
# 40 GB group: llama3-8b tp=8 pp=2 stage 1, 15.67 GiB, against its 37.3 GiB)
printf '{"name":"m40","groups":[{"name":"h100","nodes":2,"preset":"dgx-h100"},{"name":"a100-40","nodes":2,"preset":"dgx-a100","device":"A100-SXM4-40GB"}],"fabric":{"kind":"rail-fat-tree","radix":64}}' >"$tmp/m40.json"
"$simtrain" memory --model llama3-8b --layout tp=8,pp=2,dp=2,gbs=16 --cluster "$tmp/m40.json" >"$tmp/m40"
check "memory: stage 0 against the H100's 74.5 GiB" "grep -q '^stage 0 .*fits the 74.5 GiB of one H100-SXM' '$tmp/m40'"
check "memory: stage 1 against the A100 40 GB's 37.3 GiB" "grep -q '^stage 1 .*fits the 37.3 GiB of one A100-SXM4-40GB' '$tmp/m40'"
check "memory: the tightest stage is the A100 one" "grep -q '^tightest .* on stage 1, the 37.3 GiB of one A100-SXM4-40GB: every stage fits' '$tmp/m40'"
"$simtrain" memory --model llama3-8b --layout tp=8,pp=2,dp=2,gbs=16 --cluster "$tmp/m40.json" --json >"$tmp/m40.j"
check "memory --json: each stage names its device" "grep -q '\"stage\":1,.*\"device\":\"A100-SXM4-40GB\",\"device_bytes\":40000000000' '$tmp/m40.j'"

# a bad group is named with its place
printf '{"name":"m","groups":[{"nodes":2,"preset":"dgx-h100"},{"nodes":2,"device":"A100-SXM4-80GB"}],"fabric":{"kind":"rail-fat-tree","radix":64}}' >"$tmp/bad.json"
"$simtrain" platform "$tmp/bad.json" >/dev/null 2>"$tmp/bad"; rc=$?
check "a group without a node fails (rc $rc) naming groups[1]" \
  "[ $rc -ne 0 ] && grep -q \"groups\[1\]: key 'node' is missing\" '$tmp/bad'"

# Groups of unlike GPUs per node: a DGX H100 (GPUs 0-7) then two 4-GPU A100
# boards (GPUs 8-11, 12-15: a full mesh of 100 GB/s pairs, 4 HDR NICs of 25
# GB/s) on one switch.  A one-channel ring in index order runs at its
# slowest edge: the HDR NICs (B = 25 GB/s; L = 2 x 1 us + 0.1 us), so a
# 1 GiB all-reduce over all 16 takes 2 x 15 x 2.1 us + 2 x 15/16 x 2^30 /
# 25e9 = 0.0805936368 s (links at line rate: --ideal).
cat >"$tmp/gpn.json" <<'EOT'
{"name": "gpn", "groups": [
  {"name": "h100", "nodes": 1, "preset": "dgx-h100"},
  {"name": "a100x4", "nodes": 2, "device": "A100-SXM4-80GB",
   "node": {"gpus": 4, "intra": {"kind": "full-mesh", "links_per_gpu": 3, "link_GBps": 100, "lat_us": 0.5},
            "nics": {"count": 4, "Gbps": 200, "lat_us": 1.0}}}],
 "fabric": {"kind": "switch", "switch_lat_us": 0.1}}
EOT
"$simtrain" platform "$tmp/gpn.json" >"$tmp/gpn.sum"
check "unlike node sizes: the groups' GPUs" "grep -q '^gpus           16 (3 nodes) in 2 node groups$' '$tmp/gpn.sum' && grep -q '^group a100x4   nodes 1-2, GPUs 8-15 (8 GPUs, 4 per node)$' '$tmp/gpn.sum'"
t=$("$simtrain" coll allreduce --gpus 16 --cluster "$tmp/gpn.json" --ideal --algo ring --channels 1 --bytes 1G --json | grep -o '"time_s":[^,]*' | cut -d: -f2)
check "unlike node sizes: ring all-reduce $t s = closed form 0.0805936368 s" \
  "awk -v t='$t' 'BEGIN { d = t / 0.0805936368 - 1; exit !(d < 1e-9 && d > -1e-9) }'"
out=$("$simtrain" run --model llama3-8b --layout tp=4,dp=4,gbs=16 --cluster "$tmp/gpn.json" --json --quiet); rc=$?
check "unlike node sizes: a step runs (tp=4 inside every node)" "[ $rc -eq 0 ] && grep -q '\"step_time_s\":' <<<\"\$out\""
err=$("$simtrain" platform "$tmp/gpn.json" -o "$tmp/gpn.xml" 2>&1 >/dev/null); rc=$?
check "unlike node sizes: no XML (rc $rc)" "[ $rc -eq 2 ] && grep -q 'unlike GPUs per node' <<<\"\$err\" && [ ! -e '$tmp/gpn.xml' ]"

if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "groups: all checks passed"
