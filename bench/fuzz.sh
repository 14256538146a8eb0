#!/bin/bash
# Run the libFuzzer targets (tests/fuzz/fuzz_*.c), each for a given time, on
# seed corpora from tests/data, examples/, platforms/data and ../shared.
#
#   cmake -S . -B build-fuzz -DSIMTRAIN_FUZZ=ON -DCMAKE_C_COMPILER=clang \
#         -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo
#   cmake --build build-fuzz -j2 --target fuzz
#   bench/fuzz.sh [-t SECONDS | -c CPU_SECONDS] [-j JOBS] [-w WORKDIR] [-T SECONDS] build-fuzz/tests/fuzz [TARGET...]
#   bench/fuzz.sh --seeds-only build-fuzz/tests/fuzz fuzz_smpi   (ctest: each seed once)
#
# -t: seconds per target (default 60); -c: CPU seconds per target instead
# (run in rounds of at most 10 minutes until the target has used that much
# CPU, so that a target sharing its core still gets its full budget);
# -j: targets run at once (default 1);
# -w: where the growing corpora, logs and crash inputs go (default
# WORKDIR=build-fuzz/fuzz-work, kept between runs so a corpus grows);
# -T: an input running longer than this is a time-out (default 30 s; it
# is wall time, so a run beside other work, niced, needs more: one at
# nice 19 beside two busy processes timed out on inputs that take 1 s).
# Prints a row per target: seconds, CPU seconds, executions, corpus (inputs and bytes),
# coverage (edges, features) and crashes; exits 1 when any target crashed,
# leaked, ran out of memory or time (its input is kept under WORKDIR/NAME/).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
shared=${ST_SHARED_DIR:-$here/../shared}
secs=60 cpu=0 jobs=1 work="" seeds_only=0 unit_timeout=30
while [ $# -gt 0 ]; do
  case $1 in
    -t) secs=$2; shift 2 ;;
    -c) cpu=$2; shift 2 ;;
    -j) jobs=$2; shift 2 ;;
    -w) work=$2; shift 2 ;;
    -T) unit_timeout=$2; shift 2 ;;
    --seeds-only) seeds_only=1; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || { echo "usage: bench/fuzz.sh [-t SECONDS | -c CPU_SECONDS] [-j JOBS] [-w WORKDIR] BINDIR [TARGET...]" >&2; exit 1; }
bin=$(cd "$1" && pwd) || exit 1
shift
[ -n "$work" ] || work=$bin/../../fuzz-work
mkdir -p "$work" && work=$(cd "$work" && pwd)
if [ $# -eq 0 ]; then
  set -- $(cd "$bin" && ls fuzz_* 2>/dev/null | grep -v '\.' )
fi
[ $# -gt 0 ] || { echo "no fuzz targets in $bin (build with -DSIMTRAIN_FUZZ=ON)" >&2; exit 1; }

# The seeds of a target: files (plain copies; .gz seeds inflated, so that
# the fuzzer mutates the text the reader parses) into WORK/NAME/seeds.
seed_files() {
  local D=$here/tests/data S=$shared/traces
  case $1 in
    fuzz_workload) ls "$here"/examples/pipeline2.json "$D"/unmatched.json "$D"/bad/wl_*.json ;;
    fuzz_model) ls "$D"/hf/*.json "$D"/bad/model_*.json "$D"/fuzz/model_*.json ;;
    fuzz_layout) ls "$D"/fuzz/layout_* ;;  # and the strings below
    fuzz_cluster) ls "$here"/platforms/data/presets/*.json "$here"/examples/clusters/*.json \
                     "$here"/examples/fabrics/*.json "$D"/*.json "$D"/bad/cluster_*.json ;;
    fuzz_xml) ls "$D"/bad/xml_*.xml ;;
    fuzz_kineto) ls "$D"/kineto_ddp/*.json "$D"/bad/kineto_*.json "$S"/param-dlrm-v100x8/kineto/* ;;
    fuzz_et) ls "$D"/fuzz/et_rank0.json ;;
    fuzz_chakra) ls "$shared"/peer-astra/*.et "$S"/chakra-resnet50-ddp/*.et
                 find "$S"/astra-sim/microbench-et -name '*.0.et' ;;
    fuzz_astra) ls "$D"/astra_*.txt "$S"/astra-sim/text-workloads-1.0/*.txt ;;
    fuzz_simai) ls "$S"/simai/*.txt "$D"/astra_tiny.txt ;;
    fuzz_smpi) ls "$D"/smpi_*.txt "$D"/bad/smpi_*.txt "$S"/simgrid-ti/actions*.txt ;;
    fuzz_results) ls "$D"/results-small.h5 "$D"/fuzz/hdf5/*.h5 ;;
  esac 2>/dev/null
}
layout_seeds='tp=8,pp=4,mbs=1,gbs=512
tp=4,pp=2,mbs=1,gbs=64
tp=1,pp=1,dp=8,mbs=1,gbs=8
tp=2,pp=4,vpp=2,mbs=1,gbs=64,schedule=1f1b-interleaved
tp=8,cp=2,ep=4,pp=2,mbs=1,gbs=256,zero=1,recompute=selective
tp=8,dp=4,gbs=32,balance=compute
tp=2,pp=3,mbs=1,gbs=12,stage_layers=10+11+11
tp=1,dp=4,gbs=32,dp_microbatches=2+2+6+6,zero=3,dp_impl=fsdp2
tp=4,dp=8,mbs=16,gbs=512,recompute=full,flash=0,dtype=fp16,tp_async=0,overlap_grad_reduce=1,bucket=13107200
tp=8,pp=4,vpp=3,mbs=2,gbs=256,recompute=full,flash=0,dtype=fp16,tp_async=0,pp_scatter=1,dropout=0.1
tp=2,dp=4,mbs=1,gbs=8,sp=1,dropout=0.1'

make_seeds() {
  local name=$1 dir=$work/$1/seeds
  rm -rf "$dir" && mkdir -p "$dir"
  if [ "$name" = fuzz_layout ]; then
    local i=0
    while read -r l; do i=$((i + 1)); printf '%s' "$l" >"$dir/layout$i"; done <<<"$layout_seeds"
  fi
  local f
  seed_files "$name" | while read -r f; do
    [ -f "$f" ] || continue
    local b; b=$(basename "$f")
    case $f in
      *.gz) gzip -dc "$f" >"$dir/${b%.gz}" ;;
      *) cp "$f" "$dir/$b" ;;
    esac
  done
}

dict_of() {
  local d=$here/tests/fuzz/${1#fuzz_}.dict
  [ -f "$d" ] && echo "-dict=$d"
}

# One target for secs seconds; prints its row.
run_one() {
  local name=$1 w=$work/$1
  mkdir -p "$w/corpus" "$w/crashes"
  make_seeds "$name"
  local log=$w/fuzz.log
  if [ $seeds_only = 1 ]; then
    # each seed once, as ctest does: a crash on a seed fails the test
    "$bin/$name" -runs=0 -rss_limit_mb=4096 -timeout=60 $(dict_of "$name") "$w/seeds" >"$log" 2>&1
    local rc=$?
    [ $rc -eq 0 ] || { tail -n 30 "$log"; echo "FAIL: $name on its seeds (exit $rc)"; return 1; }
    echo "ok: $name, $(ls "$w/seeds" | wc -l) seeds"
    return 0
  fi
  local t0; t0=$(date +%s)
  # rounds until the budget is used: one of secs seconds, or as many as the
  # CPU budget takes; CPU time (user + system) from bash's time
  local used=0 execs=0 rc=0 round left n TIMEFORMAT='cpu_seconds: %3U %3S'
  : >"$log"
  while :; do
    round=$secs
    if [ "$cpu" -gt 0 ]; then
      left=$((cpu - used)); [ $left -gt 0 ] || break
      round=$(( left < 600 ? left : 600 ))
    fi
    { time ( cd "$w/crashes" && "$bin/$name" -max_total_time="$round" -rss_limit_mb=4096 \
        -timeout="$unit_timeout" -max_len=65536 -print_final_stats=1 $(dict_of "$name") \
        "$w/corpus" "$w/seeds" >>"$log" 2>&1 ); } 2>"$w/time"
    rc=$?
    used=$(awk -v u="$used" '/^cpu_seconds:/ { printf "%d", u + $2 + $3 + 0.5 }' "$w/time")
    n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    execs=$((execs + ${n:-0}))
    # a round's corpus merges into the next; a crash or a failure ends it
    [ $rc -eq 0 ] || break
    [ "$cpu" -gt 0 ] || break
    sed -i 's/^stat::number_of_executed_units:/stat::counted_units:/' "$log"
  done
  local t1; t1=$(date +%s)
  local cov ft corp crashes
  cov=$(grep -a -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
  ft=$(grep -a -o 'ft: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
  corp=$(grep -a -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' "$log" | tail -n 1 | cut -d' ' -f2)
  crashes=$(ls "$w/crashes" | grep -c -E '^(crash|leak|oom|timeout)-')
  printf '%-14s %6ss %6s CPU s %12s execs %14s corpus %6s edges %7s features %3s crashes%s\n' \
    "$name" "$((t1 - t0))" "$used" "$execs" "${corp:-?}" "${cov:-?}" "${ft:-?}" "$crashes" \
    "$([ $rc -eq 0 ] || echo "  (exit $rc: see $log)")"
  [ $rc -eq 0 ] && [ "$crashes" -eq 0 ]
}

# HDF5's own losses on corrupt files are not ours (tests/fuzz/lsan.supp)
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$here/tests/fuzz/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
fail=0
if [ "$jobs" -le 1 ]; then
  for t in "$@"; do run_one "$t" || fail=1; done
else
  export -f run_one make_seeds seed_files dict_of
  export here shared secs cpu work bin seeds_only layout_seeds unit_timeout
  printf '%s\n' "$@" | xargs -P "$jobs" -I{} bash -c 'run_one {}' || fail=1
fi
exit $fail
