#!/bin/bash
# stragglers.sh — `simtrain run --slow/--variability/--iterations` on a pure
# data-parallel step (tp=1, pp=1, dp=8 on one node, the gradients reduced
# after the backward pass: the all-reduce waits for the slowest rank).
# Closed forms, recomputed by awk from the unslowed run's own numbers:
#   - one rank's compute x 1.3 lengthens the step by 0.3 x its compute (every
#     compute op of this step comes before the all-reduce or after it on the
#     critical path), and the others wait exactly that long for it;
#   - a node's GPUs x 1.1 (on two nodes): the step grows by 0.1 x compute;
#   - a ring link at f x its bandwidth: the collective's time is latency +
#     B / f, so T(0.25) - T(0.5) = 2 (T(0.5) - T(1)); a glob slowing every
#     ring link alike gives the same time as one (the ring's slowest edge);
#   - rank classes are refused for compute factors (with the reason) and
#     stay exact for a slowed link: --no-symmetry and --exact agree;
#   - variability: the same seed gives the same bytes, another seed another
#     step; --iterations runs the steps back to back and reports the mean;
# then the critical path fields, the results file, `train` passing the
# options on, and the errors for bad values.  Without the options nothing
# new is printed (the predictions pin checks the bytes).
. "$(dirname "$0")/../cli_lib.sh" "$@"

# a and b agree to rel (default 1e-9) relative
close() { awk -v a="$1" -v b="$2" -v r="${3:-1e-9}" 'BEGIN { d = a - b; if (d < 0) d = -d;
  m = b < 0 ? -b : b; exit !(d <= r * m) }'; }
calc() { awk "BEGIN { printf \"%.17g\", $1 }"; }
# the JSON without the wall-clock time
nowall() { sed 's/"sim_wall_s":[^,]*,//' <<<"$1"; }

dp=(run --model megatron-1.7b --layout tp=1,pp=1,dp=8,mbs=1,gbs=8 --cluster node8:1 --json --quiet)
base=$("$simtrain" "${dp[@]}")
T=$(json_num "$base" step_time_s); C=$(json_num "$base" compute_s)
check "the unslowed run has no critical-path fields" "! grep -q slowest_rank <<<\"\$base\""
check "the unslowed run uses rank classes" "grep -q 'rank classes' <<<\"\$(json_str \"\$base\" reduction)\""

# ---- one rank slowed ------------------------------------------------------------
s=$("$simtrain" "${dp[@]}" --slow gpu=3:1.3)
check "gpu=3:1.3: step = T + 0.3 x compute (1e-9)" \
  "close '$(json_num "$s" step_time_s)' '$(calc "$T + 0.3 * $C")'"
check "gpu=3:1.3: mean compute = (7 + 1.3) / 8 x compute" \
  "close '$(json_num "$s" compute_s)' '$(calc "$C * 8.3 / 8")'"
check "gpu=3:1.3: slowest rank 3, the only critical one" \
  "[ '$(json_num "$s" slowest_rank)' = 3 ] && grep -q '\"critical_ranks\":\[3\],\"num_critical_ranks\":1' <<<\"\$s\""
check "gpu=3:1.3: rank 3 waited 0, another 0.3 x compute" \
  "[ '$(json_num "$s" slowest_wait_s)' = 0 ] && close '$(json_num "$s" max_wait_s)' '$(calc "0.3 * $C")'"
check "gpu=3:1.3: rank classes refused, saying why" \
  "[ \"\$(json_str \"\$s\" reduction)\" = 'none (rank 3 is slowed)' ]"
x=$("$simtrain" "${dp[@]}" --slow gpu=3:1.3 --exact)
check "gpu=3:1.3: --exact gives the same step (1e-9)" \
  "close '$(json_num "$x" step_time_s)' '$(json_num "$s" step_time_s)'"
t=$("$simtrain" run --model megatron-1.7b --layout tp=1,pp=1,dp=8,mbs=1,gbs=8 --cluster node8:1 \
  --quiet --slow gpu=3:1.3)
check "the text report has the critical path line" \
  "grep -qE '^  critical path +rank 3 \(waited 0.000000 s per step\); rank [0-9] waited longest' <<<\"\$t\""
s2=$("$simtrain" "${dp[@]}" --slow gpu=3:1.2 --slow gpu=3:1.5)
check "two --slow on one rank multiply (1.2 x 1.5 = 1.8)" \
  "close '$(json_num "$s2" step_time_s)' '$(calc "$T + 0.8 * $C")'"
s1=$("$simtrain" "${dp[@]}" --slow gpu=3:1)
check "a factor of 1 changes nothing and keeps rank classes" \
  "[ '$(json_num "$s1" step_time_s)' = '$T' ] && grep -q 'rank classes' <<<\"\$(json_str \"\$s1\" reduction)\""

# ---- a node slowed ------------------------------------------------------------------
dp2=(run --model megatron-1.7b --layout tp=1,pp=1,dp=16,mbs=1,gbs=16 --cluster node8:2 --json --quiet)
b2=$("$simtrain" "${dp2[@]}")
n=$("$simtrain" "${dp2[@]}" --slow node=1:1.1)
check "node=1:1.1: step = T + 0.1 x compute (1e-9)" \
  "close '$(json_num "$n" step_time_s)' '$(calc "$(json_num "$b2" step_time_s) + 0.1 * $(json_num "$b2" compute_s)")'"
check "node=1:1.1: ranks 8-15 critical, slowest 8" \
  "grep -q '\"slowest_rank\":8,\"critical_ranks\":\[8,9,10,11,12,13,14,15\],\"num_critical_ranks\":8' <<<\"\$n\""
check "node=1:1.1: rank classes refused, saying why" \
  "[ \"\$(json_str \"\$n\" reduction)\" = 'none (node 1 is slowed)' ]"

# ---- a link slowed -------------------------------------------------------------------
l1=$("$simtrain" "${dp[@]}" --slow link=nvl-3-up:0.5 | tee "$tmp/l1")
l2=$("$simtrain" "${dp[@]}" --slow link=nvl-3-up:0.25)
T5=$(json_num "$l1" step_time_s); T25=$(json_num "$l2" step_time_s)
check "link at f: the bandwidth term scales by 1/f: T(.25) - T(.5) = 2 (T(.5) - T(1))" \
  "close '$(calc "$T25 - $T5")' '$(calc "2 * ($T5 - $T)")'"
check "link at 0.5: only communication grows" \
  "close '$(json_num "$l1" compute_s)' '$C' && close '$(calc "$T5 - $T")' '$(calc "$(json_num "$l1" exposed_comm_s) - $(json_num "$base" exposed_comm_s)")'"
for o in --no-symmetry --exact; do
  e=$("$simtrain" "${dp[@]}" --slow link=nvl-3-up:0.5 $o)
  check "link at 0.5: $o gives the same step (1e-9)" "close '$(json_num "$e" step_time_s)' '$T5'"
done
g=$("$simtrain" "${dp[@]}" --slow 'link=nvl-*-up:0.5')
check "link glob nvl-*-up at 0.5: the same step as one ring link at 0.5" \
  "close '$(json_num "$g" step_time_s)' '$T5'"

# ---- variability -----------------------------------------------------------------------
v=(--iterations 4 --variability lognormal:0.05)
a1=$("$simtrain" "${dp[@]}" "${v[@]}"); a2=$("$simtrain" "${dp[@]}" "${v[@]}")
a3=$("$simtrain" "${dp[@]}" "${v[@]}" --seed 1)
b1=$("$simtrain" "${dp[@]}" "${v[@]}" --seed 2)
check "variability: the same seed, the same bytes" "[ \"\$(nowall \"\$a1\")\" = \"\$(nowall \"\$a2\")\" ]"
check "variability: --seed 1 is the default" "[ \"\$(nowall \"\$a1\")\" = \"\$(nowall \"\$a3\")\" ]"
check "variability: another seed, another step time" \
  "[ '$(json_num "$a1" step_time_s)' != '$(json_num "$b1" step_time_s)' ]"
check "variability: 4 iterations" "[ '$(json_num "$a1" iterations)' = 4 ]"
check "variability: rank classes refused, saying why" \
  "[ \"\$(json_str \"\$a1\" reduction)\" = 'none (compute varies by rank and iteration: --variability)' ]"
check "variability: a synchronous step is slower than the mean compute (max of 8 draws)" \
  "awk -v a=$(json_num "$a1" step_time_s) -v t=$T 'BEGIN { exit !(a > t) }'"
i4=$("$simtrain" "${dp[@]}" --iterations 4)
check "--iterations 4 alone: the mean step is the single step (1e-9)" \
  "close '$(json_num "$i4" step_time_s)' '$T' && [ '$(json_num "$i4" iterations)' = 4 ]"
z=$("$simtrain" "${dp[@]}" --variability lognormal:0)
check "lognormal:0 draws factor 1: the unslowed step" "[ '$(json_num "$z" step_time_s)' = '$T' ]"

# ---- the results file -----------------------------------------------------------------
"$simtrain" run --model megatron-1.7b --layout tp=1,pp=1,dp=8,mbs=1,gbs=8 --cluster node8:1 \
  --quiet --slow gpu=3:1.3 -o "$tmp/s.h5" >/dev/null
r=$("$simtrain" report "$tmp/s.h5" --json 2>/dev/null)
check "report --json of a slowed run: the same critical path" \
  "grep -qF \"\$(grep -o '\"slowest_rank\".*' <<<\"\$s\" | tr -d '}')\" <<<\"\$r\""
"$simtrain" run --model megatron-1.7b --layout tp=1,pp=1,dp=8,mbs=1,gbs=8 --cluster node8:1 \
  --quiet -o "$tmp/b.h5" >/dev/null
r=$("$simtrain" report "$tmp/b.h5" --json 2>/dev/null)
check "report --json of an unslowed run: no critical-path fields" "! grep -q slowest_rank <<<\"\$r\""

# ---- train passes them on ----------------------------------------------------------------
tr=$("$simtrain" train --model megatron-1.7b --layout tp=1,pp=1,dp=8,mbs=1,gbs=8 --cluster node8:1 \
  --tokens 1B --quiet --json --slow gpu=3:1.3 --iterations 4 --variability lognormal:0.05 --seed 2)
ru=$("$simtrain" "${dp[@]}" --slow gpu=3:1.3 --iterations 4 --variability lognormal:0.05 --seed 2)
check "train: the step of run with the same --slow/--variability/--iterations/--seed" \
  "[ '$(json_num "$tr" step_time_s)' = '$(json_num "$ru" step_time_s)' ]"

# ---- errors ------------------------------------------------------------------------------
err_is() { # name, expected message, arguments...
  local name=$1 want=$2
  shift 2
  local out code
  out=$("$simtrain" "$@" 2>&1); code=$?
  check "$name: exit $code, '$want'" "[ $code -eq 1 ] && grep -qF -- \"\$want\" <<<\"\$out\""
}
err_is "rank out of range" "simtrain: error: --slow 'gpu=8:1.3': rank 8 is out of range: the workload has 8 ranks (0..7)" \
  "${dp[@]}" --slow gpu=8:1.3
err_is "node out of range" "simtrain: error: --slow 'node=1:1.1': node 1 is out of range: the workload's 8 ranks are on nodes 0..0 of cluster 'node8:1' (8 GPUs per node)" \
  "${dp[@]}" --slow node=1:1.1
err_is "factor 0" "simtrain: error: --slow 'gpu=1:0': the factor '0' is not a number greater than 0" \
  "${dp[@]}" --slow gpu=1:0
err_is "negative factor" "the factor '-2' is not a number greater than 0" "${dp[@]}" --slow link=nvl-0-up:-2
err_is "unknown kind" "--slow 'cpu=1:2': 'cpu' is not gpu, node or link" "${dp[@]}" --slow cpu=1:2
err_is "no factor" "--slow 'gpu=1' is not gpu=RANK:FACTOR, node=NODE:FACTOR or link=NAME:FACTOR" \
  "${dp[@]}" --slow gpu=1
err_is "bad rank" "--slow 'gpu=x:1.2': 'x' is not a rank number" "${dp[@]}" --slow gpu=x:1.2
err_is "unknown link" "simtrain: error: --slow 'link=spine-3:0.5': cluster 'node8:1' has no link named 'spine-3'" \
  "${dp[@]}" --slow link=spine-3:0.5
err_is "unknown distribution" "--variability 'normal:0.1': the distribution is not lognormal (lognormal:SIGMA)" \
  "${dp[@]}" --variability normal:0.1
err_is "bad sigma" "--variability 'lognormal:-1': sigma '-1' is not a number from 0 to 10" \
  "${dp[@]}" --variability lognormal:-1
err_is "bad seed" "--seed '-3' is not a whole number from 0 to 2^64-1" "${dp[@]}" --seed -3
err_is "bad iterations" "--iterations '0' is not a count from 1 to 1000" "${dp[@]}" --iterations 0
err_is "train: not with --step-time" "--slow, --variability and --iterations shape the simulated step: not with --step-time" \
  train --model megatron-1.7b --layout tp=1,pp=1,dp=8,mbs=1,gbs=8 --cluster node8:1 --tokens 1B \
  --step-time 1 --slow gpu=1:2

[ "$fails" -eq 0 ] && echo "stragglers: all checks passed"
exit $((fails > 0))
