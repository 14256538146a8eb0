#!/bin/bash
# trace_run.sh — `simtrain run --trace`: the import options, the replay
# report (text, --json "replay", /replay in the results, report --json equal
# to run --json), the what-if note, and the rank count of each format.
# Checks on the shared traces exit 77 (skipped) when that folder is absent.
set -u
simtrain=$1
shared=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
data=$here/../data
fails=0
check() { # name, condition
  if eval "$2"; then :; else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Without the shared traces: options, errors, a trace of our own.
err=$("$simtrain" run --workload x --step 3 --cluster node8 2>&1 >/dev/null); rc=$?
check "trace option without --trace exits 1" "[ $rc -eq 1 ]"
check "trace option without --trace message" "[ \"\$err\" = \"simtrain: error: --step, --et, --no-launch-gaps, --gpus, --dims, --from-device, --world, --dp and --tp go with --trace (see 'simtrain run --help')\" ]"
err=$("$simtrain" run --trace "astra:$data/astra_tiny.txt" --cluster node8 --gpus zero 2>&1 >/dev/null); rc=$?
check "bad --gpus exits 1" "[ $rc -eq 1 ]"
json=$("$simtrain" run --trace "astra:$data/astra_tiny.txt" --cluster node8 --json --quiet); rc=$?
check "astra run exits 0" "[ $rc -eq 0 ]"
check "astra expands over the cluster's 8 GPUs" "grep -q '\"num_gpus\":8,' <<<\"\$json\""
check "astra has nothing measured: no replay object" "! grep -q '\"replay\"' <<<\"\$json\""
json=$("$simtrain" run --trace "astra:$data/astra_tiny.txt" --cluster node8 --gpus 4 --json --quiet)
check "astra --gpus 4" "grep -q '\"num_gpus\":4,' <<<\"\$json\""

# an all-to-all-v whose members send different totals (their splits) is one
# collective, not a mismatch; rank 1's 0.5 s sleep is on the critical path
json=$("$simtrain" run --trace "smpi:$here/../data/smpi_tiny.txt" --cluster node8 --json --quiet); rc=$?
check "smpi alltoallv with unequal totals replays" "[ $rc -eq 0 ]"
check "smpi alltoallv step after the 0.5 s sleep" "grep -Eq '\"step_time_s\":0\\.5[0-9]*,' <<<\"\$json\""
err=$("$simtrain" run --trace "astra:$data/astra_tiny.txt" --cluster node8 --from-device TPU-v9 2>&1 >/dev/null); rc=$?
check "unknown --from-device exits 2" "[ $rc -eq 2 ]"
check "unknown --from-device names it" "grep -q \"^simtrain: error: --from-device: device 'TPU-v9' is unknown (known: V100-SXM2, \" <<<\"\$err\""
err=$("$simtrain" run --trace "chakra:$tmp/none" --cluster node8 --dims 8,0 2>&1 >/dev/null); rc=$?
check "bad --dims exits 1" "[ $rc -eq 1 ]"
check "bad --dims message" "[ \"\$err\" = \"simtrain: error: --dims '8,0': sizes must be positive whole numbers, as in 8,16 (see 'simtrain run --help')\" ]"
err=$("$simtrain" import "chakra:$tmp/none" --dims 8,,8 -o "$tmp/x.json" 2>&1 >/dev/null); rc=$?
check "import: bad --dims exits 1" "[ $rc -eq 1 ]"
check "run --help names --dims" "\"$simtrain\" run --help | grep -q '^  --dims N0,N1,\.\.\. '"
check "import --help names --dims" "\"$simtrain\" import --help | grep -q '^  --dims N0,N1,\.\.\. '"

# Chakra's involved_dim (ASTRA-sim's side-by-side workload, when present):
# import needs --dims; run defaults to the cluster's nodes; the dimensions
# change the groups, so the step.
P=${shared:+$shared/peer-astra}
if [ -n "$P" ] && [ -f "$P/transformer_L10.0.et" ]; then
  mkdir -p "$tmp/pa"
  for r in $(seq 0 15); do ln -s "$P/transformer_L10.0.et" "$tmp/pa/t.$r.et"; done
  err=$("$simtrain" import "chakra:$tmp/pa/t" -o "$tmp/pa.json" 2>&1 >/dev/null); rc=$?
  check "involved_dim without --dims: import exits 1" "[ $rc -eq 1 ]"
  check "involved_dim without --dims: file, node, --dims" "grep -Eq \"^simtrain: error: trace '$tmp/pa/t.0.et': node [0-9]+: 'involved_dim' refers to topology dimensions: pass --dims N0,N1,\\.\\.\\. \\(their product the 16 ranks\\)\\$\" <<<\"\$err\""
  out=$("$simtrain" import "chakra:$tmp/pa/t" --dims 8,2 -o "$tmp/pa.json"); rc=$?
  check "import --dims 8,2 exits 0" "[ $rc -eq 0 ]"
  err=$("$simtrain" import "chakra:$tmp/pa/t" --dims 8,4 -o "$tmp/pa.json" 2>&1 >/dev/null); rc=$?
  check "--dims against the ranks: message" "[ \"\$err\" = \"simtrain: error: --dims 8,4 makes 32 ranks but trace '$tmp/pa/t' has 16 (its files, or --gpus)\" ]"
  a=$("$simtrain" run --trace "chakra:$tmp/pa/t" --cluster node8:2 --json --quiet 2>&1 | sed 's/"sim_wall_s":[^,]*,//')
  b=$("$simtrain" run --trace "chakra:$tmp/pa/t" --cluster node8:2 --dims 8,2 --json --quiet 2>&1 | sed 's/"sim_wall_s":[^,]*,//')
  c=$("$simtrain" run --trace "chakra:$tmp/pa/t" --cluster node8:2 --dims 2,8 --json --quiet 2>&1 | sed 's/"sim_wall_s":[^,]*,//')
  check "run without --dims: the cluster's 8 GPUs per node x 2 nodes" "[ -n \"\$a\" ] && [ \"\$a\" = \"\$b\" ]"
  check "other dimensions, other groups, another step" "grep -q '\"step_time_s\"' <<<\"\$c\" && [ \"\$c\" != \"\$b\" ]"
fi

# One rank stands for all: a hand-built DDP step of rank 0 of 2 (tests/data/
# kineto_ddp/README.md: two GEMMs, an all-reduce of 100,000,000 bytes whose
# measured 450 us is the A100 NVLink bus bandwidth of nccl-tests, about
# 222 GB/s; the optimizer after it) replays its own 7,500 us step within 10%.
D=$data/kineto_ddp/rank0.trace.json
out=$("$simtrain" run --trace "kineto:$D" --gpus 2 --cluster dgx-a100:1 --quiet); rc=$?
check "ddp rank 0 of 2 replays with --gpus 2" "[ $rc -eq 0 ]"
check "ddp: the copied-rank map" "grep -q '^  ranks without a trace run a given rank.s (given <- copies): 0 <- 1$' <<<\"\$out\""
step=$(awk '$1 == "0" { gsub(",", "", $3); print $3 }' <<<"$out")
check "ddp: replayed step $step us within 10% of the measured 7,500 us" "awk -v s=\"$step\" 'BEGIN { exit !(s >= 6750 && s <= 8250) }'"
out2=$("$simtrain" run --trace "kineto:$D" --cluster dgx-a100:1 --quiet)
# (the same replay, but for the wall time it took, which a loaded machine
# can print as 0.01 s where an idle one prints 0.00 s)
check "ddp: the recorded world size is the default" \
  "[ \"\$(grep -v ' s wall' <<<\"\$out\")\" = \"\$(grep -v ' s wall' <<<\"\$out2\")\" ]"
err=$("$simtrain" run --trace "kineto:$D" --gpus 4 --cluster dgx-a100:1 2>&1 >/dev/null); rc=$?
check "--gpus against the recorded world: exits 1" "[ $rc -eq 1 ]"
check "--gpus against the recorded world: says --world" "grep -q 'records a world of 2 ranks (to replay the job at another size, give --world 4)' <<<\"\$err\""
json=$("$simtrain" run --trace "kineto:$D" --gpus 2 --cluster dgx-a100:1 --json --quiet)
check "--json: the copied map" "grep -q '\"copied\":\[{\"from\":0,\"ranks\":\"1\"}\]' <<<\"\$json\""
check "--json: no per-rank array" "! grep -q '\"source_rank\"' <<<\"\$json\""
json=$("$simtrain" run --trace "kineto:$D" --gpus 2 --cluster dgx-a100:1 --json --quiet --ranks 1)
check "--json --ranks 1: that rank, copied from 0" "grep -q '\"ranks\":\[{\"rank\":1,\"source_rank\":0,' <<<\"\$json\""
err=$("$simtrain" run --trace "kineto:$D" --ranks 0-9 --cluster dgx-a100:1 2>&1 >/dev/null); rc=$?
check "--ranks outside the ranks fails" "[ $rc -ne 0 ] && grep -q '^simtrain: error: --ranks: ' <<<\"\$err\""
# Resized: 2 -> 8 on one node, compute as measured, communication grows.
o8=$("$simtrain" run --trace "kineto:$D" --world 8 --cluster dgx-a100:1 2>"$tmp/err")
check "--world 8: the note" "grep -q '^simtrain: note: the trace.s 2 ranks resized to 8: data-parallel groups of 2 now 8 ' \"$tmp/err\""
c2=$(awk '$1 == "0" { gsub(",", "", $9); print $9 }' <<<"$out"); c8=$(awk '$1 == "0" { gsub(",", "", $9); print $9 }' <<<"$o8")
check "--world 8: compute as measured" "awk '\$1 == \"0\" { exit !(\$6 == \"6,990.0\") }' <<<\"\$o8\""
check "--world 8: the all-reduce takes longer ($c2 -> $c8 us)" "awk -v a=\"$c2\" -v b=\"$c8\" 'BEGIN { exit !(b > a) }'"
# A 1,024-rank replay's report fits on one screen.
big=$("$simtrain" run --trace "kineto:$D" --world 1024 --cluster dgx-a100:128 --quiet)
check "1,024 ranks: the report fits in 40 lines" "[ \$(wc -l <<<\"\$big\") -le 40 ]"
check "1,024 ranks: min, median, max, 5 slowest" "grep -q '^  median ' <<<\"\$big\" && grep -q '^  the 5 slowest ranks' <<<\"\$big\""
check "1,024 ranks: the map in one line" "grep -q '(given <- copies): 0 <- 1-1023$' <<<\"\$big\""
# Bad requests, located.
err=$("$simtrain" run --trace "kineto:$data/bad/kineto_no_groups_rank0.trace.json" --world 4 --cluster dgx-a100:1 2>&1 >/dev/null); rc=$?
check "resize without process groups exits 1" "[ $rc -eq 1 ]"
check "resize without process groups: located" "[ \"\$err\" = \"simtrain: error: trace '$data/bad/kineto_no_groups_rank0.trace.json': it does not record its process groups (a Kineto trace's distributedInfo: world_size, pg_config), so the job cannot be resized\" ]"
err=$("$simtrain" run --trace "kineto:$D,$data/bad/kineto_other_job_rank1.trace.json" --cluster dgx-a100:1 2>&1 >/dev/null); rc=$?
check "a file of another job exits 2" "[ $rc -eq 2 ]"
check "a file of another job: located" "grep -q \"^simtrain: error: trace '$data/bad/kineto_other_job_rank1.trace.json': .* not of one job\" <<<\"\$err\""
err=$("$simtrain" run --trace "kineto:$D" --tp 2 --cluster dgx-a100:1 2>&1 >/dev/null); rc=$?
check "--tp refused with the reason" "[ $rc -eq 1 ] && grep -q '^simtrain: error: --tp 2: tensor parallelism cannot be resized from a trace: ' <<<\"\$err\""

if [ -z "$shared" ] || [ ! -d "$shared/traces/param-dlrm-v100x8" ]; then
  echo "shared traces not found: the checks on real traces are skipped"
  [ $fails -eq 0 ] && exit 77
  exit 1
fi
T=$shared/traces

# DLRM on its own machine: the replay report, in every form.
out=$("$simtrain" run --trace "kineto:$T/param-dlrm-v100x8/kineto" --cluster dgx-v100:1 --quiet); rc=$?
check "dlrm run exits 0" "[ $rc -eq 0 ]"
check "replay table follows the summary" "grep -q '^replay of the trace, measured against replayed (us):' <<<\"\$out\""
check "source and replay devices named" "grep -q '^  measured on Tesla V100-SXM2-32GB, replayed on V100-SXM2$' <<<\"\$out\""
check "whole step measured 20,823.0 us" "grep -Eq '^  whole +20,823\\.0 ' <<<\"\$out\""
check "eight rank rows" "[ \$(grep -Ec '^  [0-7] +[0-9,]+\\.[0-9] ' <<<\"\$out\") -eq 8 ]"
check "the table fits in 100 columns" "[ \$(sed -n '/^replay of the trace/,\$p' <<<\"\$out\" | awk '{ if (length > m) m = length } END { print m }') -le 100 ]"
json=$("$simtrain" run --trace "kineto:$T/param-dlrm-v100x8/kineto" --cluster dgx-v100:1 --json --quiet -o "$tmp/dlrm.h5"); rc=$?
check "dlrm --json exits 0" "[ $rc -eq 0 ]"
check "one line of JSON" "[ \$(wc -l <<<\"\$json\") -eq 1 ]"
check "--json has the replay object" "grep -q '\"replay\":{\"source_device\":\"Tesla V100-SXM2-32GB\",\"replay_device\":\"V100-SXM2\",\"rescaled\":false,\"measured_step_s\":0.02082' <<<\"\$json\""
check "--json replay: 8 ranks, no per-rank array without --ranks" "grep -q '\"num_ranks\":8,' <<<\"\$json\" && ! grep -q '\"measured_compute_s\"' <<<\"\$json\""
report=$("$simtrain" report "$tmp/dlrm.h5" --json)
check "report --json prints what run --json printed" "[ \"\$report\" = \"\$json\" ]"
report=$("$simtrain" report "$tmp/dlrm.h5")
check "report prints the replay table" "grep -q '^replay of the trace, measured against replayed (us):' <<<\"\$report\""
if command -v h5dump >/dev/null; then
  h=$(h5dump -H "$tmp/dlrm.h5")
  for obj in 'DATASET "replay"' 'ATTRIBUTE "source_device"' 'ATTRIBUTE "measured_step_s"' \
             '"measured_compute_s"' '"replayed_comm_s"'; do
    check "h5dump shows $obj" "grep -q '$obj' <<<\"\$h\""
  done
  check "no timeline unless asked" "! grep -q 'DATASET \"timeline\"' <<<\"\$h\""
fi

# What-if: the same trace on H100s; compute moves, the note says by how much.
err=$("$simtrain" run --trace "kineto:$T/param-dlrm-v100x8/kineto" --cluster node8 2>&1 >"$tmp/h100.txt"); rc=$?
check "what-if run exits 0" "[ $rc -eq 0 ]"
check "what-if note" "grep -q '^simtrain: note: compute moved from V100-SXM2 to H100-SXM (841 kernels): gemm x0\\.[0-9]* elementwise x0\\.[0-9]*$' <<<\"\$err\""
check "what-if marked in the table" "grep -q 'replayed on H100-SXM (compute rescaled by the compute model)' \"$tmp/h100.txt\""
err=$("$simtrain" run --trace "kineto:$T/param-dlrm-v100x8/kineto" --cluster node8 --from-device H100-SXM 2>&1 >/dev/null)
check "--from-device equal to the cluster's: no rescaling" "[ -z \"\$err\" ]"
out=$("$simtrain" run --trace "kineto:$T/param-dlrm-v100x8/kineto" --cluster dgx-v100:1 --no-launch-gaps --quiet); rc=$?
check "--no-launch-gaps accepted by run" "[ $rc -eq 0 ]"
out=$("$simtrain" run --trace "kineto:$T/param-dlrm-v100x8/kineto" --cluster dgx-v100:1 --step 10 --et "$T/param-dlrm-v100x8/et" --quiet); rc=$?
check "--step and --et accepted by run" "[ $rc -eq 0 ]"
err=$("$simtrain" run --trace "kineto:$T/param-dlrm-v100x8/kineto" --cluster dgx-v100:1 --step 99 2>&1 >/dev/null); rc=$?
check "a step not in the trace exits 2" "[ $rc -eq 2 ]"

# Chakra: a 4-rank trace stays 4 ranks on an 8-GPU cluster; --gpus expands.
json=$("$simtrain" run --trace "chakra:$T/astra-sim/microbench-et/microbenchmarks/all_reduce/4npus_1MB/all_reduce" --cluster node8 --json --quiet)
check "chakra keeps its 4 ranks" "grep -q '\"num_gpus\":4,' <<<\"\$json\""
out=$("$simtrain" run --trace "chakra:$T/chakra-resnet50-ddp/chakra" --gpus 2 --cluster dgx-a100:1 --quiet); rc=$?
check "resnet-50 replays over 2 ranks" "[ $rc -eq 0 ]"
check "resnet-50: measured compute of rank 0" "grep -Eq '^  0 +n/a +[0-9,.]+ +292,828\\.0 +292,828\\.0 ' <<<\"\$out\""

# SMPI: runs; nothing measured, so no table.
out=$("$simtrain" run --trace "smpi:$T/simgrid-ti/split_traces" --cluster node8 --quiet); rc=$?
check "smpi replays" "[ $rc -eq 0 ]"
check "smpi: no replay table" "! grep -q 'replay of the trace' <<<\"\$out\""

# One rank stands for all on the real traces: DLRM given only rank 0 (and
# only ranks 0 and 3) replays with every collective completed, the map in
# the report, and (without the launch gaps) a step between the closed-form
# bounds: rank 0's busiest stream (its compute kernels on stream 7, summed
# here from the raw file) and all its kernels plus its replayed collectives
# one after another.
K=$T/param-dlrm-v100x8/kineto
R0=$(ls "$K"/worker0_*); R3=$(ls "$K"/worker3_*)
out=$("$simtrain" run --trace "kineto:$R0" --cluster dgx-v100:1 --no-launch-gaps --quiet); rc=$?
check "dlrm rank 0 alone replays" "[ $rc -eq 0 ]"
check "dlrm rank 0 alone: the map" "grep -q '(given <- copies): 0 <- 1-7$' <<<\"\$out\""
lo=$(gzip -dc "$R0" | tr -d '\n' | grep -o '{[^{}]*"cat": *"kernel"[^{}]*' | grep -v -i nccl |
     awk '{ if (match($0, /"tid": *7,/) && match($0, /"dur": *[0-9.]+/)) { d = substr($0, RSTART, RLENGTH); sub(/.*: */, "", d); s += d } } END { print s }')
read -r st cm cc <<<"$(awk '$1 == "0" { gsub(",", ""); print $3, $6, $9 }' <<<"$out")"
check "dlrm rank 0: step $st us >= busiest stream $lo us" "awk -v s=$st -v l=$lo 'BEGIN { exit !(s >= l) }'"
check "dlrm rank 0: step $st us <= kernels $cm + collectives $cc us" "awk -v s=$st -v a=$cm -v b=$cc 'BEGIN { exit !(s <= a + b) }'"
out=$("$simtrain" run --trace "kineto:$R0,$R3" --cluster dgx-v100:1 --quiet); rc=$?
check "dlrm ranks 0 and 3 replay" "[ $rc -eq 0 ]"
check "dlrm ranks 0 and 3: the map" "grep -q '(given <- copies): 0 <- 1-2; 3 <- 4-7$' <<<\"\$out\""
out=$("$simtrain" run --trace "chakra:$T/chakra-resnet50-ddp/chakra" --gpus 2 --cluster dgx-a100:1 --quiet)
check "resnet-50 rank 0 stands for rank 1: the map" "grep -q '(given <- copies): 0 <- 1$' <<<\"\$out\""
err=$("$simtrain" run --trace "chakra:$T/chakra-resnet50-ddp/chakra" --gpus 2 --world 8 --cluster dgx-a100:1 2>&1 >/dev/null); rc=$?
check "resizing a chakra trace: no process groups, refused" "[ $rc -eq 1 ] && grep -q 'it does not record its process groups' <<<\"\$err\""
# Resized to 64 GPUs: compute as measured, communication grows.
o64=$("$simtrain" run --trace "kineto:$R0" --world 64 --cluster dgx-v100:8 --quiet 2>/dev/null); rc=$?
check "dlrm resized to 64 replays" "[ $rc -eq 0 ]"
read -r c64 m64 <<<"$(awk '$1 == "0" { gsub(",", ""); print $6, $9 }' <<<"$o64")"
check "dlrm at 64: compute as measured ($c64 = $cm us)" "[ \"$c64\" = \"$cm\" ]"
check "dlrm at 64: communication grows ($cc -> $m64 us)" "awk -v a=$cc -v b=$m64 'BEGIN { exit !(b > a) }'"
check "dlrm at 64: the summary table" "grep -q '^  over the 64 ranks' <<<\"\$o64\""

[ $fails -eq 0 ] && echo "trace_run: all checks passed"
exit $((fails > 0))
