#!/bin/bash
# The example run under valgrind's memcheck: a replay of
# examples/pipeline2.json written to a results file, the report and the
# Perfetto export read back from it, a generated workload, and an SMPI
# trace import.  Any invalid read or write, use of an uninitialised value or
# definite leak fails (exit 1, valgrind's report on stderr); "possibly lost"
# is the memory guard's thread (st_mem.c), alive at exit by design.
# usage: bench/valgrind.sh [BUILD_DIR]     (default build; about 40 s)
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
ST=${1:-$here/build}/simtrain
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 77; }
[ -x "$ST" ] || { echo "no simtrain at $ST (build first)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
VG="valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --track-origins=yes"
fail=0
run() {
  local what=$1; shift
  local t0; t0=$(date +%s)
  $VG "$ST" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  printf '%-8s %3ss  exit %s\n' "$what" "$(( $(date +%s) - t0 ))" "$rc"
  if [ $rc -ne 0 ]; then
    fail=1
    grep '^==' "$tmp/err" | head -n 40
  fi
}
run run run --workload "$here/examples/pipeline2.json" --cluster node8 --timeline -o "$tmp/r.h5"
run report report "$tmp/r.h5" --json
run export export "$tmp/r.h5" --perfetto -o "$tmp/t.json"
run gen gen --model llama3-8b --layout tp=4,pp=2,mbs=1,gbs=16 --gpus 8 -o "$tmp/w.json.gz"
run import import "smpi:$here/tests/data/smpi_tiny.txt" -o "$tmp/s.json"
[ $fail -eq 0 ] && echo "valgrind: no errors" || echo "valgrind: errors (above)"
exit $fail
