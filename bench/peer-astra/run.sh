#!/usr/bin/env bash
# bench/peer-astra/run.sh — the side-by-side with ASTRA-sim: its transformer
# workload (shared/peer-astra, one SPMD Chakra file) replayed on the network
# its README describes (astra_2d_switch.json: 8 GPUs per node on a switch,
# one NIC per GPU on a scale-out switch), one process per size, wall time
# and peak memory from /usr/bin/time -v.
#
#   bench/peer-astra/run.sh [SHARED [SIMTRAIN [WORKLOAD [RANKS...]]]]
#
# Defaults: ../shared beside the checkout, build/simtrain, transformer_L100,
# 64 256 1024 ranks.  Every rank runs rank 0's file (--gpus), collectives
# span the dimensions involved_dim names (--dims 8,RANKS/8).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../measure.sh"
shared=${1:-$here/../../../shared}
simtrain=${2:-$here/../../build/simtrain}
wl=${3:-transformer_L100}
shift $(( $# > 3 ? 3 : $# ))
sizes=${*:-64 256 1024}
if [ ! -f "$shared/peer-astra/$wl.0.et" ]; then
  echo "peer-astra: $shared/peer-astra/$wl.0.et not found (the shared folder is needed)" >&2
  exit 77
fi
printf 'ranks\twall_s\tpeak_rss_mib\tstep_time_s\tactivities\tsimulated_ranks\n'
for n in $sizes; do
  printf '%s\t%s\n' "$n" "$(measure "$simtrain" run --trace "chakra:$shared/peer-astra/$wl" \
    --gpus "$n" --dims "8,$((n / 8))" --cluster "$here/astra_2d_switch.json" --json --quiet)"
done
