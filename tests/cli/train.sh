#!/bin/bash
# train.sh — `simtrain run --tokens/--price/--pue`: the time, cost and energy
# to train, checked against the same run's step numbers by awk (docs/cost.md
# gives the formulas); the token suffixes; the device's list price and its
# absence; the results file, report and compare; bad values.
. "$(dirname "$0")/../cli_lib.sh" "$@"

# a and b agree to 1e-12 relative (both printed with 17 digits)
close() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b;
  exit !(d <= 1e-12 * (m > 1 ? m : 1)) }'; }

run=(run --model llama3-8b --layout tp=2,pp=4,vpp=2,mbs=1,gbs=16 --cluster dgx-h100:1 --quiet)

# ---- the numbers, by hand from the run's own step --------------------------
json=$("$simtrain" "${run[@]}" --json --tokens 1.5B --price 2.5 --pue 1.2); rc=$?
check "--tokens --price --pue exits 0" "[ $rc -eq 0 ]"
step=$(json_num "$json" step_time_s)
tps=$(json_num "$json" tokens_per_step)
gpus=$(json_num "$json" num_gpus)
compute=$(json_num "$json" compute_s)
exposed=$(json_num "$json" exposed_comm_s)
# steps = ceil(1.5e9 / tokens per step); time = steps x step
steps=$(awk -v t=1.5e9 -v p="$tps" 'BEGIN { q = t / p; n = int(q); if (n < q) n++; printf "%d", n }')
time=$(awk -v n="$steps" -v s="$step" 'BEGIN { printf "%.17g", n * s }')
# cost = GPU-hours x price
cost=$(awk -v g="$gpus" -v t="$time" 'BEGIN { printf "%.17g", g * t / 3600 * 2.5 }')
# busy = (compute + 1/2 exposed) / step; a DGX H100 GPU: TDP 700 W, idle 70 W,
# its share of the node's 4,600 W non-GPU power 575 W; energy = power x time x PUE
busy=$(awk -v c="$compute" -v e="$exposed" -v s="$step" \
  'BEGIN { b = (c + 0.5 * e) / s; if (b > 1) b = 1; printf "%.17g", b }')
power=$(awk -v g="$gpus" -v b="$busy" 'BEGIN { printf "%.17g", g * (70 + 630 * b + 575) }')
energy=$(awk -v p="$power" -v t="$time" 'BEGIN { printf "%.17g", p * t * 1.2 / 3.6e9 }')
check "train_tokens is 1.5e9" "[ \"$(json_num "$json" train_tokens)\" = 1500000000 ]"
check "train_steps = ceil(tokens / tokens per step) = $steps" \
  "[ \"$(json_num "$json" train_steps)\" = '$steps' ]"
check "time_to_train_s = steps x step time" "close '$(json_num "$json" time_to_train_s)' '$time'"
check "cost_usd = GPUs x hours x price" "close '$(json_num "$json" cost_usd)' '$cost'"
check "price_usd_per_gpu_hour is --price" "[ \"$(json_num "$json" price_usd_per_gpu_hour)\" = 2.5 ]"
check "gpu_busy_fraction = (compute + exposed / 2) / step" \
  "close '$(json_num "$json" gpu_busy_fraction)' '$busy'"
check "power_W = GPUs x (idle + (TDP - idle) x busy + host share)" \
  "close '$(json_num "$json" power_W)' '$power'"
check "pue is --pue" "[ \"$(json_num "$json" pue)\" = 1.2 ]"
check "energy_MWh = power x time x PUE" "close '$(json_num "$json" energy_MWh)' '$energy'"
check "the run is a real one (0 < busy < 1)" "awk -v b='$busy' 'BEGIN { exit !(b > 0 && b < 1) }'"

# ---- the device's list price (H100-SXM: 6.88 USD per GPU-hour) ------------
json=$("$simtrain" "${run[@]}" --json --tokens 1.5B); rc=$?
check "--tokens alone exits 0" "[ $rc -eq 0 ]"
check "the H100 list price" "[ \"$(json_num "$json" price_usd_per_gpu_hour)\" = 6.8799999999999999 ]"
check "cost at the list price" \
  "close '$(json_num "$json" cost_usd)' \"\$(awk -v c='$cost' 'BEGIN { printf \"%.17g\", c / 2.5 * 6.88 }')\""
check "PUE 1 by default: energy / 1.2" \
  "close '$(json_num "$json" energy_MWh)' \"\$(awk -v e='$energy' 'BEGIN { printf \"%.17g\", e / 1.2 }')\""

# ---- suffixes: the same budget spelt six ways ------------------------------
for t in 1500000000 1.5e9 1.5b 1500000K 1.5G 0.0015T; do
  j=$("$simtrain" "${run[@]}" --json --tokens "$t")
  check "--tokens $t is 1.5e9 tokens" "[ \"$(json_num "$j" train_tokens)\" = 1500000000 ]"
done
j=$("$simtrain" "${run[@]}" --json --tokens 15T)
check "--tokens 15T" "[ \"$(json_num "$j" train_tokens)\" = 15000000000000 ]"
j=$("$simtrain" "${run[@]}" --json --tokens 300M)
check "--tokens 300M" "[ \"$(json_num "$j" train_tokens)\" = 300000000 ]"

# ---- a device without a price (MI300X): cost null, a note, energy from the
# derived host power (8 x 750 W x 4,600 / 5,600 per node) --------------------
mi=(run --model llama3-8b --layout tp=4,dp=2,mbs=1,gbs=8 --cluster mi300x:1)
json=$("$simtrain" "${mi[@]}" --json --tokens 1B 2>"$tmp/err"); rc=$?
check "MI300X --tokens exits 0" "[ $rc -eq 0 ]"
check "no MI300X price: cost null" "[ \"$(json_num "$json" cost_usd)\" = null ]"
check "no MI300X price: a note" \
  "grep -qx 'simtrain: note: MI300X has no built-in price: the cost is n/a (give --price USD_PER_GPU_HOUR)' '$tmp/err'"
s=$(json_num "$json" step_time_s); n=$(json_num "$json" train_steps)
b=$(json_num "$json" gpu_busy_fraction)
want=$(awk -v s="$s" -v n="$n" -v b="$b" \
  'BEGIN { printf "%.17g", 8 * (75 + 675 * b + 750 * 4600 / 5600) * n * s / 3.6e9 }')
check "MI300X energy with the derived host power" "close '$(json_num "$json" energy_MWh)' '$want'"
json=$("$simtrain" "${mi[@]}" --json --tokens 1B --price 3 --quiet)
check "MI300X with --price has a cost" \
  "close '$(json_num "$json" cost_usd)' \"\$(awk -v n='$n' -v s='$s' 'BEGIN { printf \"%.17g\", 8 * n * s / 3600 * 3 }')\""

# ---- text, results file, report and compare ---------------------------------
out=$("$simtrain" "${run[@]}" --tokens 1.5B --price 2.5 -o "$tmp/a.h5"); rc=$?
check "text run exits 0" "[ $rc -eq 0 ]"
check "text: the budget" "grep -q '^  to train on 1.5B tokens (steady-state steps, docs/cost.md):$' <<<\"\$out\""
check "text: the steps" "grep -Eq '^    steps +$steps \$' <<<\"\$out\""
check "text: the cost line" "grep -Eq '^    cost +[0-9]+ USD \\(2.5 USD per GPU-hour\\)$' <<<\"\$out\""
check "text: the energy line" "grep -Eq '^    energy +[0-9.]+ MWh \\(PUE 1.00\\)$' <<<\"\$out\""
run_json=$("$simtrain" "${run[@]}" --tokens 1.5B --price 2.5 --json -o "$tmp/b.h5")
report_json=$("$simtrain" report "$tmp/b.h5" --json)
check "report --json prints what run --json printed" "[ \"\$run_json\" = \"\$report_json\" ]"
report=$("$simtrain" report "$tmp/a.h5")
check "report shows the time to train" "grep -q '^    time to train ' <<<\"\$report\""
"$simtrain" "${run[@]}" --tokens 1.5B --price 5 -o "$tmp/c.h5" >/dev/null
cmp=$("$simtrain" compare "$tmp/a.h5" "$tmp/c.h5" --json)
ratio=$(grep -o '"ratio":{[^}]*}' <<<"$cmp" | sed -n 2p)
check "compare: twice the price, twice the cost" "close '$(json_num "$ratio" cost_usd)' 2"
check "compare: same time to train" "[ \"$(json_num "$ratio" time_to_train_s)\" = 1 ]"
check "compare: same energy" "[ \"$(json_num "$ratio" energy_MWh)\" = 1 ]"
text=$("$simtrain" compare "$tmp/a.h5" "$tmp/c.h5")
check "compare text: a cost row" "grep -Eq '^  cost \\(USD\\) +[0-9]+ +[0-9]+$' <<<\"\$text\""
check "compare text: a time-to-train row" "grep -q '^  time to train (days) ' <<<\"\$text\""

# ---- bad values: usage errors (exit 1) with the value quoted -----------------
bad() { # $1: what, $2: message, rest: arguments after the run
  local what=$1 msg=$2
  shift 2
  err=$("$simtrain" "${run[@]}" "$@" 2>&1 >/dev/null); rc=$?
  check "$what exits 1" "[ $rc -eq 1 ]"
  check "$what message" "[ \"\$err\" = \"simtrain: error: $msg (see 'simtrain run --help')\" ]"
}
count="is not a token count from 1 to 1e18 (a number with an optional K, M, B, G or T: 15T, 300B, 2.5e12)"
bad "--tokens 0" "--tokens '0' $count" --tokens 0
bad "--tokens -1T" "--tokens '-1T' $count" --tokens -1T
bad "--tokens junk" "--tokens 'lots' $count" --tokens lots
bad "--tokens 15X" "--tokens '15X' $count" --tokens 15X
bad "--tokens 15TT" "--tokens '15TT' $count" --tokens 15TT
bad "--tokens 1e400" "--tokens '1e400' $count" --tokens 1e400
bad "--tokens nan" "--tokens 'nan' $count" --tokens nan
bad "--price -1" "--price '-1' is not a price in USD per GPU-hour (a number, 0 or more)" \
  --tokens 1T --price -1
bad "--price abc" "--price 'abc' is not a price in USD per GPU-hour (a number, 0 or more)" \
  --tokens 1T --price abc
bad "--pue 0.9" "--pue '0.9' is not a PUE (a number, 1 or more)" --tokens 1T --pue 0.9
bad "--price without --tokens" "--price and --pue go with --tokens" --price 2
bad "--pue without --tokens" "--price and --pue go with --tokens" --pue 1.1
# a trace that does not say how many tokens a step trains: an input error,
# before anything is simulated
err=$("$simtrain" run --trace smpi:"$(dirname "$0")/../data/smpi_tiny.txt" --cluster node8 \
  --tokens 1B --quiet 2>&1 >/dev/null); rc=$?
check "trace without a token count exits 2" "[ $rc -eq 2 ]"
check "trace without a token count message" "[ \"\$err\" = 'simtrain: error: the workload does not say how many tokens a step trains, so a token budget cannot be turned into steps' ]"

[ $fails -eq 0 ] || exit 1
echo "train: all checks passed"
