#!/bin/bash
# simtrain platform: summary, routes, XML output and errors.
# usage: platform.sh <simtrain> <shared-dir>
set -u
ST=$1
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

out=$("$ST" platform dgx-h100:4 --summary) || fail "summary exit $?"
grep -q '^gpus           32 (4 nodes x 8)$' <<<"$out" || fail "summary gpus: $out"
grep -q '^bisection      800 GB/s per direction$' <<<"$out" || fail "bisection (16 NICs x 50 GB/s / 2): $out"
grep -q '^power          TDP 700 W per GPU, non-GPU 4600 W per node; list price 6.88 USD per GPU-hour$' <<<"$out" ||
  fail "summary power (DGX H100: 10.2 kW less 8 x 700 W): $out"
grep -q '^variant of' <<<"$out" && fail "H100-SXM is no variant: $out"
# a device variant (devices.json "tuning") says whose parameters it takes, at
# its clock: 886.8 / 989.4 of H100 SXM's bf16 peak
out=$("$ST" platform "$(dirname "$0")/../../bench/validation/clusters/grand-teton-h100.json" --summary) ||
  fail "variant summary exit $?"
grep -q "^variant of     H100-SXM's compute parameters and published kernel rates, the rates at 0.8963 of its clock$" <<<"$out" ||
  fail "variant line: $out"
out=$("$ST" platform tpu-v4 --summary) || fail "tpu summary exit $?"
grep -q '^power          TDP n/a per GPU, non-GPU n/a per node; list price none built in$' <<<"$out" ||
  fail "summary power without a TDP: $out"

out=$("$ST" platform dgx-h100:4 --route 0 8) || fail "route exit $?"
grep -q '^route gpu-0 -> gpu-8 (node 0 -> node 1): 2 links, 1 switches$' <<<"$out" || fail "route: $out"
grep -q '^latency        2.13 us (links 2 us + 1 switches x 0.13 us)$' <<<"$out" || fail "latency: $out"

"$ST" platform node8:2 -o "$tmp/p.xml" >/dev/null || fail "-o exit $?"
grep -c '<route ' "$tmp/p.xml" | grep -qx 240 || fail "16 GPUs should have 16*15 routes"
out=$("$ST" platform "$tmp/p.xml" --route gpu-0 gpu-9) || fail "xml route exit $?"
grep -q '^  nic-0-0-up ' <<<"$out" || fail "xml route links: $out"
grep -q '^latency        2 us$' <<<"$out" || fail "xml route latency: $out"

err=$("$ST" platform dgx-h100:99999 -o "$tmp/big.xml" 2>&1); rc=$?
[ $rc -eq 2 ] || fail "big XML exit $rc"
[ ! -e "$tmp/big.xml" ] || fail "nothing may be written on error"
grep -q "^simtrain: error: cluster 'dgx-h100:99999': 799992 GPUs; XML with explicit routes is written only up to 256 GPUs" <<<"$err" || fail "big XML message: $err"

err=$("$ST" platform dgx-h100:4 --route 0 32 2>&1); rc=$?
[ $rc -eq 2 ] || fail "route out of range exit $rc"
[ "$err" = "simtrain: error: cluster 'dgx-h100:4': --route: GPU 32 is out of range (0..31)" ] || fail "$err"

err=$("$ST" platform 2>&1); rc=$?
[ $rc -eq 1 ] || fail "no cluster exit $rc"

# Every preset's XML runs a step (an A100's did not: the ring-fill term of
# its tuning took an estimate without the file's link rates, infinity, as a
# latency, and SimGrid aborted).
for p in dgx-a100:2 dgx-v100:2 mi300x:2; do
  "$ST" platform "$p" -o "$tmp/x.xml" >/dev/null || fail "$p -o"
  out=$("$ST" run --model llama3-8b --layout tp=8,dp=2,gbs=16 --cluster "$tmp/x.xml" --json --quiet 2>&1); rc=$?
  [ $rc -eq 0 ] && grep -Eq '"step_time_s":[0-9.]+(e[-+][0-9]+)?,' <<<"$out" || fail "$p as XML: exit $rc: $out"
done

# Node groups of unlike shapes: a DGX H100 (NVSwitch, 8 NDR NICs) and a
# DGX-1 (cube-mesh, 4 EDR NICs behind PCIe) on one switch.
cat >"$tmp/shapes.json" <<'EOT'
{"name": "shapes", "groups": [{"name": "h100", "nodes": 1, "preset": "dgx-h100"},
 {"name": "v100", "nodes": 1, "preset": "dgx-v100"}], "fabric": {"kind": "switch"}}
EOT
out=$("$ST" platform "$tmp/shapes.json") || fail "shapes summary"
grep -q '^  intra-node   cube-mesh, 6 links x 25 GB/s' <<<"$out" || fail "shapes: the V100 group's mesh: $out"
grep -q '^  nics         4 per node x 12.5 GB/s' <<<"$out" || fail "shapes: the V100 group's NICs: $out"
# H100: 8 x 2 NVSwitch + 8 x 2 NIC; V100: 8 x 4 lanes + 8 x 2 PCIe + 4 x 2 NIC
grep -q '^links          88 directed$' <<<"$out" || fail "shapes: links built: $out"
# bisection: half the NICs, (8 x 50 + 4 x 12.5) / 2
grep -q '^bisection      225 GB/s per direction$' <<<"$out" || fail "shapes: bisection: $out"
out=$("$ST" platform "$tmp/shapes.json" --route 13 0) || fail "shapes route"
grep -q '^route gpu-13 -> gpu-0 (node 1 -> node 0): 3 links, 1 switches$' <<<"$out" || fail "shapes route: $out"
grep -q '^  nic-1-2-up ' <<<"$out" || fail "shapes route: GPU 13 (local 5) uses its node's NIC 2: $out"
"$ST" platform "$tmp/shapes.json" -o "$tmp/shapes.xml" >/dev/null || fail "shapes -o"
[ "$(grep -c '<link id="unused' "$tmp/shapes.xml")" = 0 ] || fail "shapes XML: unused slots written"
for c in "$tmp/shapes.json" "$tmp/shapes.xml"; do
  out=$("$ST" run --model llama3-8b --layout tp=8,dp=2,gbs=16 --cluster "$c" --json --quiet 2>&1); rc=$?
  [ $rc -eq 0 ] || fail "a step on $c: exit $rc: $out"
done
echo ok
