#!/usr/bin/env bash
# bench/scaling/run.sh — wall time and peak memory of one llama3-405b step
# (tp=8, pp=16, 7 + 14x8 + 7 layers, 16 micro-batches per replica) against
# the GPU count, one process per size (/usr/bin/time -v), then the table
# (scaling.md) and the plot (scaling.svg) from it.
#
#   bench/scaling/run.sh [SIMTRAIN [OUTDIR [GPUS...]]]
#
# Default GPUs: 1024 2048 4096 8192 16384 32768 65536 131072 (dp = GPUs / 128
# on dgx-h100:GPUs/8).  Extra simtrain options in $SIMTRAIN_OPTS (e.g.
# --no-symmetry for the reference).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../measure.sh"
simtrain=${1:-$here/../../build/simtrain}
out=${2:-$here}
shift $(( $# > 2 ? 2 : $# ))
sizes=${*:-1024 2048 4096 8192 16384 32768 65536 131072}
mkdir -p "$out"
tsv="$out/scaling.tsv"
printf 'gpus\twall_s\tpeak_rss_mib\tstep_time_s\tactivities\tsimulated_ranks\n' >"$tsv"
for g in $sizes; do
  dp=$((g / 128))
  nodes=$((g / 8))
  printf '%s\t%s\n' "$g" "$(measure "$simtrain" run --model llama3-405b \
    --layout "tp=8,pp=16,dp=$dp,mbs=1,gbs=$((16 * dp)),sp=1,first_stage_layers=7,last_stage_layers=7" \
    --cluster "dgx-h100:$nodes" --json --quiet ${SIMTRAIN_OPTS:-})" | tee -a "$tsv"
done
bash "$here/plot.sh" "$tsv" >"$out/scaling.svg"
