#!/bin/bash
# offload.sh — host-memory offload from the command line.  A 70B model on
# one 8-GPU DGX H100 does not fit without offload and fits with it (memory);
# with it, the step holds the CPU's optimizer step and the PCIe copies as
# worked out by hand below (run); bad values and specs are located errors.
# usage: offload.sh <simtrain> <shared-dir>
#
# Hand figures (llama3-70b, docs/workloads.md "Host-memory offload"):
#   P = 70,553,706,496 parameters, shard s = P / 8 = 8,819,213,312.
#   Without offload, per GPU: weights 2 s = 17,638,426,624 B, fp32 gradients
#   4 s = 35,276,853,248 B, Adam state 12 s = 105,830,559,744 B: 158.7 GB of
#   states on an 80 GB GPU.
#   offload=optimizer: gradients and Adam state leave; the host holds
#   12 s + 4 s = 141,107,412,992 B per GPU, 1,128,859,303,936 B (1051.33 GiB)
#   for the node's 8, under the DGX H100's 2,048 GB.
#   Step: after the backward, the GPU waits only for the host:
#     the root's gradient shard to the host: (2 x 128256 x 8192 + 8192) / 8
#       parameters x 4 B = 1,050,677,248 B / 64 GB/s (PCIe Gen5 x16) + 1 us
#       = 0.016417832 s (the 8 copies together, 512 GB/s, are under the
#       host memory's 614.4 GB/s)
#     the CPU's Adam: s / (3.89e9 / 8 GPUs) = 18.137199613 s
#     the last sub-group back: (s - 8 x 1e9) x 2 B / 64 GB/s + 1 us
#       = 0.025601416 s (the 8 earlier ones hide under the CPU's next
#       sub-group: 2e9 B take 31 ms against its 2.06 s)
#   exposed offload = 18.179218861 s; the GPU computes before it.
set -u
ST=$1
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
L=tp=1,pp=1,dp=8,zero=3,mbs=1,gbs=8,recompute=full
num() { grep -o "\"$1\":[^,}]*" <<<"$2" | head -1 | cut -d: -f2; }
near() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t * b) }'; }

# ---- memory: does not fit, fits -----------------------------------------------
out=$("$ST" memory --model llama3-70b --layout $L --cluster dgx-h100:1 --seq 4096) || fail "memory exit $?"
grep -q 'on stage 0: does NOT fit the 74.5 GiB of one H100-SXM$' <<<"$out" || fail "no offload should not fit: $out"
grep -q '^host' <<<"$out" && fail "no host line without offload: $out"
out=$("$ST" memory --model llama3-70b --layout $L,offload=optimizer --cluster dgx-h100:1 --seq 4096) ||
  fail "memory offload exit $?"
grep -q 'on stage 0: fits the 74.5 GiB of one H100-SXM$' <<<"$out" || fail "offload should fit: $out"
grep -q '^host      1051.33 GiB per node (offload=optimizer): fits the 1907.3 GiB of host memory of a node$' \
  <<<"$out" || fail "host line: $out"
json=$("$ST" memory --model llama3-70b --layout $L,offload=optimizer --cluster dgx-h100:1 --seq 4096 --json) ||
  fail "memory --json exit $?"
[ "$(num host_node_bytes "$json")" = 1128859303936 ] || fail "host per node: $json"
[ "$(num host_memory_bytes "$json")" = 2048000000000 ] || fail "host memory: $json"
[ "$(num host_fits "$json")" = true ] || fail "host fits: $json"
[ "$(num weights_bytes "$json")" = 17638426624 ] || fail "weights 2 s: $json"
[ "$(num grads_bytes "$json")" = 0 ] || fail "gradients on the host: $json"
[ "$(num optimizer_bytes "$json")" = 0 ] || fail "optimizer on the host: $json"
[ "$(num host_bytes "$json")" = 141107412992 ] || fail "host bytes 16 s: $json"
json=$("$ST" memory --model llama3-70b --layout $L --cluster dgx-h100:1 --seq 4096 --json) || fail "exit $?"
[ "$(num grads_bytes "$json")" = 35276853248 ] || fail "gradients 4 s: $json"
[ "$(num optimizer_bytes "$json")" = 105830559744 ] || fail "optimizer 12 s: $json"
grep -q host_ <<<"$json" && fail "no host keys without offload: $json"
# a node without a stated host memory: reported, not checked
out=$("$ST" memory --model llama3-8b --layout tp=1,dp=8,zero=1,offload=optimizer --cluster node8) || fail "exit $?"
grep -q "the cluster does not give its host memory (node.host.memory_GB): not checked$" <<<"$out" || fail "$out"

# ---- run: the step holds the offload, as worked out above ------------------------
json=$("$ST" run --model llama3-70b --layout $L,offload=optimizer --cluster dgx-h100:1 --seq 4096 --json --quiet) ||
  fail "run exit $?"
step=$(num step_time_s "$json")
exposed=$(num offload_exposed_s "$json")
all=$(num offload_s "$json")
compute=$(num compute_s "$json")
near "$exposed" 18.179218861 1e-9 || fail "exposed offload $exposed, by hand 18.179218861"
awk -v s="$step" -v e="$exposed" -v c="$compute" 'BEGIN { exit !(s >= e + c && s < e + c + 0.1) }' ||
  fail "step $step is not the GPU's compute $compute and the exposed offload $exposed"
awk -v a="$all" -v e="$exposed" 'BEGIN { exit !(a > e) }' || fail "offload in all $all <= exposed $exposed"
out=$("$ST" run --model llama3-70b --layout $L,offload=optimizer --cluster dgx-h100:1 --seq 4096 --quiet) ||
  fail "run exit $?"
grep -q '^    exposed offload  *18.179219 s$' <<<"$out" || fail "text: $out"
grep -q '^    offload, in all  *[0-9.]* s ([0-9.]*% of the step; copies to and from host memory, the CPU.s step)$' \
  <<<"$out" || fail "text offload line: $out"
# runs without offload print as before
json=$("$ST" run --model llama3-8b --layout tp=8,mbs=1,gbs=8 --cluster dgx-h100:1 --json --quiet) || fail "exit $?"
grep -q offload <<<"$json" && fail "offload keys without offload: $json"

# the workload file carries the copies: the same step from the file
"$ST" gen --model llama3-8b --layout tp=1,dp=8,zero=3,gbs=8,recompute=full,dp_impl=deepspeed,offload=both \
  --gpus 8 -o "$tmp/w.json.gz" >/dev/null || fail "gen exit $?"
a=$("$ST" run --workload "$tmp/w.json.gz" --cluster dgx-h100:1 --json --quiet) || fail "run file exit $?"
b=$("$ST" run --model llama3-8b --layout tp=1,dp=8,zero=3,gbs=8,recompute=full,dp_impl=deepspeed,offload=both \
  --cluster dgx-h100:1 --json --quiet) || fail "run model exit $?"
[ "$(num step_time_s "$a")" = "$(num step_time_s "$b")" ] || fail "file $a vs model $b"

# ---- the platform's host memory ---------------------------------------------------
out=$("$ST" platform dgx-h100:2 --route 9 host-1) || fail "route exit $?"
grep -q '^route gpu-9 -> host-1 (node 1 -> node 1): 2 links, 0 switches$' <<<"$out" || fail "$out"
grep -q '^  gpuhost-9-up  *host  *64 GB/s  *1 us$' <<<"$out" || fail "$out"
grep -q '^  hostmem-1  *hostmem  *614.4 GB/s  *0 us$' <<<"$out" || fail "$out"
out=$("$ST" platform dgx-h100:1 --summary) || fail "summary exit $?"
grep -q '^host memory    2048 GB per node at 614.4 GB/s; GPU link to it 64 GB/s per direction, 1 us; CPU Adam 3.89 G parameters/s per node (endpoints built with offload)$' \
  <<<"$out" || fail "summary host line: $out"
"$ST" platform dgx-h100:1 --host-memory -o "$tmp/h.xml" >/dev/null || fail "xml exit $?"
[ "$(grep -c '<route src="host-0"' "$tmp/h.xml")" = 8 ] || fail "8 routes from host-0"
c=$("$ST" run --model llama3-8b --layout tp=1,dp=8,zero=3,gbs=8,recompute=full,dp_impl=deepspeed,offload=both \
  --cluster "$tmp/h.xml" --json --quiet) || fail "run on xml exit $?"
[ "$(num step_time_s "$c")" = "$(num step_time_s "$b")" ] || fail "xml $c vs built $b"

# ---- bad input: located errors, exit 2 ---------------------------------------------
err=$("$ST" run --model llama3-70b --layout $L,offload=cpu --cluster dgx-h100:1 2>&1); rc=$?
[ $rc -eq 2 ] || fail "bad value exit $rc"
[ "$err" = "simtrain: error: layout '$L,offload=cpu': key 'offload' value 'cpu' is unknown (known: none, optimizer, params, both)" ] ||
  fail "$err"
err=$("$ST" memory --model llama3-70b --layout tp=1,dp=8,offload=optimizer --cluster dgx-h100:1 2>&1); rc=$?
[ $rc -eq 2 ] || fail "zero=0 exit $rc"
grep -q "^simtrain: error: layout 'tp=1,dp=8,offload=optimizer': offload=optimizer needs zero=1, 2 or 3" <<<"$err" ||
  fail "$err"
err=$("$ST" run --model llama3-8b --layout tp=1,dp=64,zero=1,gbs=64,offload=optimizer --cluster tpu-v4 2>&1); rc=$?
[ $rc -eq 2 ] || fail "tpu exit $rc"
grep -q "^simtrain: error: cluster 'tpu-v4': the GPUs' link to host memory has no rate (the TPU-v4 has none built in)" \
  <<<"$err" || fail "$err"
cat >"$tmp/c.json" <<'EOF'
{"name": "c", "device": "H100-SXM", "node": {"gpus": 1, "intra": {"kind": "none"},
 "host": {"memory_GB": 512, "colour": "blue"}}, "fabric": {"kind": "switch"}}
EOF
err=$("$ST" platform "$tmp/c.json" 2>&1); rc=$?
[ $rc -eq 2 ] || fail "spec exit $rc"
[ "$err" = "simtrain: error: spec '$tmp/c.json': node.host: key 'colour' is unknown (see docs/platforms.md)" ] || fail "$err"
echo ok
