#!/bin/bash
# train_failures.sh — `simtrain train`: the whole run with failures,
# checkpoints and restarts on a small model and cluster.  The JSON's numbers
# are recomputed by awk from the inputs it prints (docs/failures.md gives
# the formulas): the failure rate, the checkpoint and restart times, Young's
# and Daly's intervals, the analytic expectation, the Monte-Carlo within 2%
# of it; zero failures is the steady-state time plus the checkpoints; the
# same seed gives the same bytes and another seed other ones; --step-time,
# the HDF5 file (its trials give the printed quantiles), the SVGs, the sweep
# and the errors for bad values.
. "$(dirname "$0")/../cli_lib.sh" "$@"

# a and b agree to rel (default 1e-12) relative
close() { awk -v a="$1" -v b="$2" -v r="${3:-1e-12}" 'BEGIN { d = a - b; if (d < 0) d = -d;
  m = b < 0 ? -b : b; exit !(d <= r * (m > 1 ? m : 1)) }'; }

base=(train --model llama3-8b --layout tp=2,pp=4,vpp=2,mbs=1,gbs=16 --cluster dgx-h100:1
      --tokens 1.5B --quiet)
# about one failure every 15 minutes: 8 GPUs of 2 h and a node of 8 h
fail=(--mtbf-gpu-h 2 --mtbf-node-h 8 --storage-GBps 10)

# ---- the numbers, from the printed inputs -------------------------------------
json=$("$simtrain" "${base[@]}" "${fail[@]}" --trials 4000 --json); rc=$?
check "train --json exits 0" "[ $rc -eq 0 ]"
get() { json_num "$json" "$1"; }
step=$(get step_time_s); tps=$(get tokens_per_step); steps=$(get train_steps)
gpus=$(get num_gpus); nodes=$(get num_nodes)
check "8 GPUs in 1 node" "[ '$gpus' = 8 ] && [ '$nodes' = 1 ]"
check "train_steps = ceil(1.5e9 / tokens per step)" "[ \"$steps\" = \"\$(awk -v p=$tps \
  'BEGIN { q = 1.5e9 / p; n = int(q); if (n < q) n++; printf \"%d\", n }')\" ]"
work=$(awk -v n="$steps" -v s="$step" 'BEGIN { printf "%.17g", n * s }')
check "steady_time_to_train_s = steps x step" "close '$(get steady_time_to_train_s)' '$work'"
rate=$(awk -v g="$gpus" -v n="$nodes" 'BEGIN { printf "%.17g", (g / 2 + n / 8) / 3600 }')
check "failure rate = (GPUs / MTBF_gpu + nodes / MTBF_node) / 3600" \
  "close '$(get failure_rate_per_s)' '$rate'"
# Llama 3 8B has 8,030,261,248 parameters: 14 bytes each (bf16 weights, fp32
# master weights and two Adam moments)
check "ckpt_bytes = 14 x 8,030,261,248" "[ '$(get ckpt_bytes)' = 112423657472 ]"
ckpt=$(awk 'BEGIN { printf "%.17g", 112423657472 / 10e9 }')
check "checkpoint_s = bytes / storage bandwidth" "close '$(get checkpoint_s)' '$ckpt'"
restart=$(awk -v c="$ckpt" 'BEGIN { printf "%.17g", 600 + c }')
check "restart_s = 600 s rescheduling + reading the checkpoint" \
  "close '$(get restart_s)' '$restart'"
M=$(awk -v l="$rate" 'BEGIN { printf "%.17g", 1 / l }')
check "Young = sqrt(2 ckpt M)" \
  "close '$(get young_interval_s)' \"\$(awk -v d=$ckpt -v m=$M 'BEGIN { printf \"%.17g\", sqrt(2 * d * m) }')\""
check "Daly = sqrt(2 ckpt M)(1 + sqrt(ckpt/2M)/3 + ckpt/18M) - ckpt" \
  "close '$(get daly_interval_s)' \"\$(awk -v d=$ckpt -v m=$M 'BEGIN { q = d / (2 * m);
     printf \"%.17g\", sqrt(2 * d * m) * (1 + sqrt(q) / 3 + q / 9) - d }')\""
tau=$(get checkpoint_interval_s)
check "auto: the interval is the optimum" "[ '$tau' = '$(get optimal_interval_s)' ]"
# checkpoint / MTBF is 1.3% here: Daly's higher-order formula is within 0.01%,
# Young's first-order one 5.6% long
check "the optimum within 5% of Daly, 10% of Young" \
  "close '$tau' '$(get daly_interval_s)' 0.05 && close '$tau' '$(get young_interval_s)' 0.10"
# analytic: n - 1 full segments and the last, each e^(lR) (e^(lL) - 1) / l
expect() { # work tau -> "n time failures"
  awk -v w="$1" -v t="$2" -v d="$ckpt" -v R="$restart" -v l="$rate" 'BEGIN {
    q = w / t; n = int(q); if (n < q) n++; last = w - (n - 1) * t
    F = (n - 1) * exp(l * R) * (exp(l * (t + d)) - 1) + exp(l * R) * (exp(l * (last + d)) - 1)
    printf "%d %.17g %.17g", n, F / l, F }'
}
read -r n time failures <<<"$(expect "$work" "$tau")"
check "checkpoints = ceil(work / interval)" "[ '$(get checkpoints)' = '$n' ]"
check "analytic_time_to_train_s: the renewal-reward sum" \
  "close '$(get analytic_time_to_train_s)' '$time' 1e-9"
check "failures_expected" "close '$(get failures_expected)' '$failures' 1e-9"
check "the Monte-Carlo mean within 2% of the analytic expectation" \
  "close '$(get time_to_train_s)' '$time' 0.02"
check "goodput = steady time / mean time" \
  "close '$(get goodput)' \"\$(awk -v w=$work -v t=$(get time_to_train_s) 'BEGIN { printf \"%.17g\", w / t }')\""
check "p10 < p50 < p90" "awk -v a=$(get p10_s) -v b=$(get p50_s) -v c=$(get p90_s) \
  'BEGIN { exit !(a < b && b < c) }'"
check "failures happen (the case is not trivial)" "awk -v f=$(get failures_mean) 'BEGIN { exit !(f > 10) }'"

# a given interval
j=$("$simtrain" "${base[@]}" "${fail[@]}" --ckpt-interval 1000 --json)
read -r n time failures <<<"$(expect "$work" 1000)"
check "--ckpt-interval 1000: its checkpoints" "[ '$(json_num "$j" checkpoints)' = '$n' ]"
check "--ckpt-interval 1000: its expectation" \
  "close '$(json_num "$j" analytic_time_to_train_s)' '$time' 1e-9"
check "--ckpt-interval 1000 is not auto" "[ '$(json_num "$j" checkpoint_interval_auto)' = false ]"

# ---- no failures: the steady-state time plus the checkpoints -------------------
j=$("$simtrain" "${base[@]}" --mtbf-gpu-h 1e300 --mtbf-node-h 1e300 --ckpt-interval 3600 \
    --storage-GBps 10 --json)
zero=$(awk -v w="$work" -v d="$ckpt" 'BEGIN { q = w / 3600; n = int(q); if (n < q) n++;
  printf "%.17g", w + n * d }')
check "no failures: time_to_train_s = steady + ceil(work / 3600) x ckpt" \
  "close '$(json_num "$j" time_to_train_s)' '$zero'"
check "no failures: the analytic time too" "close '$(json_num "$j" analytic_time_to_train_s)' '$zero'"
check "no failures: p10 = p90" "[ '$(json_num "$j" p10_s)' = '$(json_num "$j" p90_s)' ]"
check "no failures: none counted" "[ '$(json_num "$j" failures_mean)' = 0 ]"

# ---- the seed -----------------------------------------------------------------
"$simtrain" "${base[@]}" "${fail[@]}" --seed 42 --json >"$tmp/a.json"
"$simtrain" "${base[@]}" "${fail[@]}" --seed 42 --json >"$tmp/b.json"
"$simtrain" "${base[@]}" "${fail[@]}" --seed 43 --json >"$tmp/c.json"
check "same seed, same bytes" "cmp -s '$tmp/a.json' '$tmp/b.json'"
check "another seed, other finish times" \
  "[ \"\$(json_num \"\$(cat $tmp/a.json)\" p50_s)\" != \"\$(json_num \"\$(cat $tmp/c.json)\" p50_s)\" ]"
check "another seed, the same analytic expectation" \
  "[ \"\$(json_num \"\$(cat $tmp/a.json)\" analytic_time_to_train_s)\" = \"\$(json_num \"\$(cat $tmp/c.json)\" analytic_time_to_train_s)\" ]"

# ---- --step-time: no simulation ----------------------------------------------
j=$("$simtrain" "${base[@]}" "${fail[@]}" --step-time 2.5 --json); rc=$?
check "--step-time exits 0" "[ $rc -eq 0 ]"
check "--step-time: not simulated" "[ '$(json_num "$j" step_simulated)' = false ]"
check "--step-time: steady = steps x 2.5" \
  "close '$(json_num "$j" steady_time_to_train_s)' \"\$(awk -v n=$steps 'BEGIN { printf \"%.17g\", n * 2.5 }')\""

# ---- HDF5, SVG, sweep ---------------------------------------------------------
"$simtrain" "${base[@]}" "${fail[@]}" --trials 101 -o "$tmp/t.h5" --svg "$tmp/t.svg" \
  --svg-sweep "$tmp/s.svg" --json >"$tmp/t.json"; rc=$?
check "-o --svg --svg-sweep exit 0" "[ $rc -eq 0 ]"
check "the histogram has the quantiles" "grep -q 'id=\"quantiles\"' '$tmp/t.svg' && grep -q 'p50' '$tmp/t.svg'"
check "the sweep plot has a curve per scale" "[ \$(grep -c 'id=\"mtbf-x' '$tmp/s.svg') -eq 5 ]"
check "--svg-sweep puts the sweep in the JSON (5 x 41 rows)" \
  "[ \$(grep -o '\"mtbf_scale\"' '$tmp/t.json' | wc -l) -eq 205 ]"
if command -v h5dump >/dev/null; then
  h5dump -m '%.17g' -d /train/finish_s -y -w 1 "$tmp/t.h5" 2>/dev/null | tr -d ' ,' |
    grep -E '^[0-9]' | sort -g >"$tmp/finish.txt"
  check "/train/finish_s holds the 101 trials" "[ \$(wc -l <'$tmp/finish.txt') -eq 101 ]"
  # p50 of 101 sorted values is the 51st, p10 the 11th, p90 the 91st
  check "the file's trials give p10, p50 and p90" \
    "close \"\$(sed -n 11p $tmp/finish.txt)\" '$(json_num "$(cat "$tmp/t.json")" p10_s)' &&
     close \"\$(sed -n 51p $tmp/finish.txt)\" '$(json_num "$(cat "$tmp/t.json")" p50_s)' &&
     close \"\$(sed -n 91p $tmp/finish.txt)\" '$(json_num "$(cat "$tmp/t.json")" p90_s)'"
  check "/train has the inputs as attributes" \
    "h5dump -a /train/checkpoint_interval_s '$tmp/t.h5' >/dev/null 2>&1 && h5dump -a /train/mtbf_gpu_h '$tmp/t.h5' >/dev/null 2>&1"
fi
out=$("$simtrain" "${base[@]}" "${fail[@]}" --interval-sweep --sweep-mtbf 1,2)
check "--interval-sweep prints a header and 2 x 41 rows" \
  "[ \$(grep -c '^[12]	' <<<\"\$out\") -eq 82 ] && grep -q '^mtbf_scale	job_mtbf_h' <<<\"\$out\""

# ---- bad values: usage errors (exit 1) naming the option and the value -----------
bad() { # expected message, then the options
  local want=$1; shift
  local err; err=$("$simtrain" "${base[@]}" "$@" 2>&1 >/dev/null); local code=$?
  check "$* exits 1" "[ $code -eq 1 ]"
  check "$*: '$want'" "grep -qF -- \"\$want\" <<<\"\$err\""
}
bad "--mtbf-gpu-h '0' is not an MTBF in hours (a positive number)" --mtbf-gpu-h 0
bad "--mtbf-node-h '-3' is not an MTBF in hours (a positive number)" --mtbf-node-h -3
bad "--storage-GBps '-1' is not a bandwidth in GB/s (a positive number)" --storage-GBps -1
bad "--ckpt-interval '0' is not an interval in seconds (a positive number) or 'auto'" --ckpt-interval 0
bad "--ckpt-interval 'often' is not an interval in seconds" --ckpt-interval often
bad "--trials '0' is not a trial count from 1 to 10000000" --trials 0
bad "--ckpt-bytes '0' is not a size in bytes (a positive number)" --ckpt-bytes 0
bad "--restart-s '-1' is not a time in seconds (a number, 0 or more)" --restart-s -1
bad "--spare-nodes '-1' is not a node count from 0 to 1000000" --spare-nodes -1
bad "--seed '-4' is not a seed (a whole number, 0 or more)" --seed -4
bad "--sweep-mtbf '1,0' is not a list of up to 16 positive scales (0.5,1,2)" --sweep-mtbf 1,0
err=$("$simtrain" train --model llama3-8b --layout tp=2,pp=4,vpp=2,mbs=1,gbs=16 \
  --cluster dgx-h100:1 2>&1); code=$?
check "no --tokens: exit 1 and says so" "[ $code -eq 1 ] && grep -q -- '--tokens is required' <<<\"\$err\""

err=$("$simtrain" train --workload "$(dirname "$0")/../../examples/pipeline2.json" --cluster node8 \
  --tokens 1B --quiet 2>&1); code=$?
check "a workload file without --ckpt-bytes: exit 1, before simulating" \
  "[ $code -eq 1 ] && grep -qF -- '--ckpt-bytes is needed: the workload does not say the model' <<<\"\$err\""
j=$("$simtrain" train --workload "$(dirname "$0")/../../examples/pipeline2.json" --cluster node8 \
  --tokens 1B --quiet --ckpt-bytes 2e9 --storage-GBps 1 --json)
check "a workload file with --ckpt-bytes 2e9 at 1 GB/s: a 2 s checkpoint" \
  "[ '$(json_num "$j" checkpoint_s)' = 2 ]"

[ "$fails" -eq 0 ] && echo "train_failures: all checks passed"
exit $((fails > 0))
