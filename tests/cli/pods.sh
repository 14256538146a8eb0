#!/bin/bash
# pods.sh — clusters of pods: a DP all-reduce and all-gather across two pods
# of 1,024 H100 against the hierarchical closed form worked out below from
# the link rates, the step's wait on the inter-pod links in run's report,
# --json and the results file, and bad pod specs named where they are.
. "$(dirname "$0")/../cli_lib.sh" "$@"
root=$(cd "$(dirname "$0")/../.." && pwd)
close() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = (a - b) / b; if (d < 0) d = -d; exit !(d <= t) }'; }

# ---- the hierarchical all-reduce across two pods ------------------------------
# examples/clusters/two-h100-pods.json: two pods of 128 DGX H100 (q = 1,024 GPUs,
# 8 per node, a NIC of 400 Gb/s = 50 GB/s per GPU), each with 8 x 400 Gb/s =
# 400 GB/s to the data-centre network, 2 us per pod link.  All-reduce of
# S = 16 GiB = 17179869184 B over all 2,048 GPUs, in three phases (NCCL's
# Simple protocol; NIC payload efficiency 0.94; ring latencies from NCCL's
# tables: base 8.4 us, 3.4 us per NVLink step, 14 us per network step):
#  1. reduce-scatter inside each pod: a ring of 8 channels over 128 nodes;
#     each NIC carries one channel, (q-1)/q S / 8 = 2145386496 B, at
#     0.94 x 50e9 B/s: 45.64652 ms; latency 8.4 + (1023 - 127) x 3.4 +
#     127 x 14 = 4832.8 us.  Phase: 50.47932 ms.
#  2. the shards (S/q = 16 MiB) all-reduced across the pods: member i of one
#     pod and member i of the other exchange 2 (P-1)/P S/q = 16 MiB; the 1,024
#     exchanges out of a pod share its 400 GB/s: S / (0.94 x 400e9) =
#     45.69114 ms; latency (8.4 + 2 x 14) x 1.4 (NCCL's multi-node ring
#     all-reduce) + 2 steps x (2 + 2 us of pod links) = 58.96 us.  Phase:
#     45.75010 ms.
#  3. all-gather inside each pod: as phase 1, 50.47932 ms.
# Total 146.70874 ms.
cluster=$root/examples/clusters/two-h100-pods.json
t0=$(date +%s.%N)
json=$("$simtrain" coll allreduce --gpus 2048 --cluster "$cluster" --bytes 16G --json); rc=$?
t1=$(date +%s.%N)
check "coll allreduce on two pods exits 0" "[ $rc -eq 0 ]"
t=$(json_num "$json" time_s)
want=$(awk 'BEGIN {
  S = 17179869184; q = 1024
  p1 = 4832.8e-6 + (q - 1) / q * S / 8 / (0.94 * 50e9)
  p2 = ((8.4 + 2 * 14) * 1.4 + 2 * (2 + 2)) * 1e-6 + S / (0.94 * 400e9)
  printf "%.9g", 2 * p1 + p2 }')
check "all-reduce across pods is the hierarchical closed form within 2% ($t vs $want s)" \
  "close '$t' '$want' 0.02"
check "all-reduce across pods runs hier_pods" "[ '$(json_str "$json" algo)' = hier_pods ]"
echo "pods: all-reduce of 16 GiB over 2,048 GPUs: $t s (closed form $want s), wall $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"

# All-gather of S = 16 GiB: first across the pods (each member's S/n to its peer:
# (P-1)/P S/q = 8 MiB per member, 1,024 of them over a pod's 400 GB/s:
# S/2 / (0.94 x 400e9) = 22.84557 ms; latency 8.4 + 14 + 1 x (2 + 2) = 26.4 us),
# then inside each pod as phase 3 above (50.47932 ms).  Total 73.35129 ms.
json=$("$simtrain" coll allgather --gpus 2048 --cluster "$cluster" --bytes 16G --json); rc=$?
check "coll allgather on two pods exits 0" "[ $rc -eq 0 ]"
t=$(json_num "$json" time_s)
want=$(awk 'BEGIN {
  S = 17179869184; q = 1024
  p1 = (8.4 + 14 + 4) * 1e-6 + S / 2 / (0.94 * 400e9)
  p2 = 4832.8e-6 + (q - 1) / q * S / 8 / (0.94 * 50e9)
  printf "%.9g", p1 + p2 }')
check "all-gather across pods is the hierarchical closed form within 2% ($t vs $want s)" \
  "close '$t' '$want' 0.02"

# Inside one pod nothing changes: the first 1,024 GPUs are dgx-h100:128.
a=$("$simtrain" coll reducescatter --gpus 1024 --cluster "$cluster" --bytes 1G --json)
b=$("$simtrain" coll reducescatter --gpus 1024 --cluster dgx-h100:128 --bytes 1G --json)
check "a collective inside one pod is the pod's own ($a vs $b)" "[ '$a' = '$b' ]"

# ---- run: the step's wait on the inter-pod links -------------------------------
# Two pods of one node8 (8 GPUs) each, one 100 Gb/s pod link (12.5 GB/s) of 10 us.
# Every rank computes 10 ms, then all-reduces S = 117.5 MB with its peer in the
# other pod (communicators {k, k + 8}).  One member per pod: only the inter-pod
# phase, each member sending S / 0.94 = 125 MB; the 8 exchanges out of a pod
# share its 12.5 GB/s: 8 x 125e6 / 12.5e9 = 80 ms, after (8.4 + 2 x 14) x 1.4 +
# 2 x (10 + 10) = 90.96 us.  So: step 10 ms + 80.09096 ms, all of the
# all-reduce exposed and crossing pods; 2 x 8 x 125e6 = 2e9 B between pods; the
# busiest pod link moves 1e9 B at 12.5e9 B/s, 80 ms.
cat >"$tmp/small.json" <<'JSON'
{"name": "small", "pods": [{"cluster": "node8", "count": 2}],
 "pod_links": {"count": 1, "Gbps": 100, "lat_us": 10}}
JSON
{
  printf '{"format":"simtrain-workload","version":1,"num_ranks":16,"roles":["dp"],\n'
  printf '"communicators":['
  for k in 0 1 2 3 4 5 6 7; do
    printf '%s{"name":"dp%d","kind":"dp","ranks":[%d,%d]}' "$([ $k -gt 0 ] && echo ,)" $k $k $((k + 8))
  done
  printf '],\n"programs":[{"name":"p","streams":["compute","comm"],"ops":[\n'
  printf '{"op":"marker","mark":"iteration","value":0},\n'
  printf '{"op":"compute","name":"c","phase":"backward","duration_s":0.01},\n'
  printf '{"op":"coll","name":"g","stream":"comm","phase":"backward","coll":"allreduce","role":"dp","bytes":117500000,"waits":[1]}]}],\n'
  printf '"rank_map":{"program":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"comms":{"dp":[0,1,2,3,4,5,6,7,0,1,2,3,4,5,6,7]}}}\n'
} >"$tmp/w.json"
json=$("$simtrain" run --workload "$tmp/w.json" --cluster "$tmp/small.json" --json --quiet -o "$tmp/r.h5"); rc=$?
check "run on pods exits 0" "[ $rc -eq 0 ]"
check "step time ($(json_num "$json" step_time_s))" "close '$(json_num "$json" step_time_s)' 0.09009096 1e-9"
check "exposed crossing pods ($(json_num "$json" pod_exposed_s))" "close '$(json_num "$json" pod_exposed_s)' 0.08009096 1e-9"
check "bytes between pods ($(json_num "$json" pod_link_bytes))" "close '$(json_num "$json" pod_link_bytes)' 2e9 1e-9"
check "busiest pod link ($(json_num "$json" pod_link_busy_s))" "close '$(json_num "$json" pod_link_busy_s)' 0.08 1e-9"
rep=$("$simtrain" report "$tmp/r.h5" --json)
for k in pod_exposed_s pod_link_bytes pod_link_busy_s; do
  check "report --json reprints $k" "[ '$(json_num "$rep" $k)' = '$(json_num "$json" $k)' ]"
done
txt=$("$simtrain" report "$tmp/r.h5")
check "the report says it" "grep -q '^  inter-pod links, per step:' <<<\"\$txt\" && grep -q 'exposed, crossing pods *0.080091 s (88.9% of the step)' <<<\"\$txt\""
one=$("$simtrain" run --workload "$tmp/w.json" --cluster node8:2 --json --quiet)
check "no pod figures off a cluster of pods" "! grep -q pod_ <<<\"\$one\""

# ---- bad pods -------------------------------------------------------------------
cat >"$tmp/zero.json" <<'JSON'
{"name": "zero", "pods": [{"cluster": "node8", "count": 2}],
 "pod_links": {"count": 1, "Gbps": 0, "lat_us": 10}}
JSON
err=$("$simtrain" platform "$tmp/zero.json" 2>&1 >/dev/null); rc=$?
check "a pod link of zero bandwidth is bad input (exit $rc)" "[ $rc -eq 2 ]"
check "... named where it is ($err)" \
  "[ \"\$err\" = \"simtrain: error: spec '$tmp/zero.json': pod_links: 'Gbps' is 0; it must be greater than 0\" ]"
cat >"$tmp/gpn.json" <<'JSON'
{"name": "gpn", "pods": [{"cluster": "node8"}, {"cluster": "tpu-v5p:16"}],
 "pod_links": {"count": 1, "Gbps": 400, "lat_us": 10}}
JSON
err=$("$simtrain" run --workload "$tmp/w.json" --cluster "$tmp/gpn.json" 2>&1 >/dev/null); rc=$?
check "a pod that cannot join is bad input (exit $rc: $err)" "[ $rc -eq 2 ] && grep -q \"pods\\[1\\] ('tpu-v5p:16'): its \" <<<\"\$err\""

# ---- torus pods (as PaLM's two TPU v4 pods over the data-centre network) ---------
# Two pods of 64 TPU v4 chips (16 hosts of 4, a 4x4x4 torus with wrap-around,
# ICI links of 50 GB/s and 1 us), each host one 100 Gb/s data-centre NIC
# (12.5 GB/s, 2 us), each pod 16 x 400 Gb/s links of 2 us to the core.
cat >"$tmp/tpu.json" <<'JSON'
{"name": "tpu-v4-dcn", "nodes": 16, "device": "TPU-v4",
 "node": {"gpus": 4, "intra": {"kind": "none"}, "dcn": {"count": 1, "Gbps": 100, "lat_us": 2}},
 "fabric": {"kind": "torus", "cube": [4, 4, 4], "wrap": true, "link_GBps": 50, "lat_us": 1.0}}
JSON
cat >"$tmp/tpus.json" <<'JSON'
{"name": "two-tpu-pods", "pods": [{"cluster": "tpu.json", "name": "pod", "count": 2}],
 "pod_links": {"count": 16, "Gbps": 400, "lat_us": 2}}
JSON
out=$("$simtrain" platform "$tmp/tpus.json" --route 5 69)
check "torus pods: chip 5 leaves by its host's NIC, chip 69 (pod 1's chip 5) enters by its host's" \
  "grep -q '^  pod0.dcn-1-0-up ' <<<\"\$out\" && grep -q '^  pod1.dcn-17-0-down ' <<<\"\$out\" && grep -q '^latency        8 us' <<<\"\$out\""
out=$("$simtrain" platform "$tmp/tpus.json")
check "torus pods: the cut is the hosts' NICs, 16 x 12.5 GB/s" "grep -q '^bisection      200 GB/s per direction' <<<\"\$out\""
# 1 GiB all-reduce over the 128 chips (links at line rate): the torus
# reduce-scatter in each pod (XLA's rings per dimension: every x link carries
# S/3 x 3/4 x (1 + 1/4 + 1/16) / 2 = 0.1640625 S, at 50 GB/s: 3.5232 ms),
# the shards across the pods (S/64 per chip pair, the 4 chips of a host on
# its 12.5 GB/s NIC: 4 S/64 / 12.5e9 = 5.3687 ms, plus two steps of the 8 us
# route), the all-gather in each pod (3.5232 ms): 12.431 ms, the per-hop ICI
# latencies left out (well under 1%).
t=$("$simtrain" coll allreduce --gpus 128 --cluster "$tmp/tpus.json" --bytes 1G --ideal --json | grep -o '"time_s":[^,]*' | cut -d: -f2)
check "torus pods: all-reduce $t s within 1% of the hierarchical closed form 0.012431 s" \
  "awk -v t='$t' 'BEGIN { d = t / 0.012431 - 1; exit !(d < 0.01 && d > -0.01) }'"
sed 's/, "dcn": {"count": 1, "Gbps": 100, "lat_us": 2}//' "$tmp/tpu.json" >"$tmp/tpu0.json"
sed 's/tpu.json/tpu0.json/' "$tmp/tpus.json" >"$tmp/tpus0.json"
err=$("$simtrain" platform "$tmp/tpus0.json" 2>&1 >/dev/null); rc=$?
check "a torus pod without node.dcn is refused (exit $rc)" "[ $rc -eq 2 ] && grep -q 'its fabric is a torus without node.dcn' <<<\"\$err\""
printf '{"name":"d","nodes":2,"device":"H100-SXM","node":{"gpus":8,"intra":{"kind":"nvswitch","links_per_gpu":18,"link_GBps":25,"lat_us":0.5},"nics":{"count":8,"Gbps":400,"lat_us":1},"dcn":{"count":1,"Gbps":100,"lat_us":2}},"fabric":{"kind":"switch"}}' >"$tmp/dcn.json"
err=$("$simtrain" platform "$tmp/dcn.json" 2>&1 >/dev/null); rc=$?
check "node.dcn off a torus is refused (exit $rc)" "[ $rc -eq 2 ] && grep -q 'node.dcn is a torus host' <<<\"\$err\""

# host memory is not laid out pod by pod: offload on pods is refused
err=$("$simtrain" run --model llama3-8b --layout tp=8,dp=2,gbs=16,zero=1,offload=optimizer --cluster "$tmp/small.json" 2>&1 >/dev/null); rc=$?
check "offload on a cluster of pods is refused (exit $rc)" \
  "[ $rc -eq 2 ] && grep -q 'host memory (offload, copies to the host) is not modelled on a cluster of pods' <<<\"\$err\""

[ "$fails" -eq 0 ] && echo "pods: all checks passed"
exit $((fails > 0))
