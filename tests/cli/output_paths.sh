#!/bin/bash
# Output files (-o of run, gen, export, plot, platform): a write that fails
# (file size limit, disk full) exits 2 and leaves nothing behind; a target
# that is not a regular file (device, FIFO, folder) is refused and stays
# what it was; a symlink is written through, and stays a link; a run killed
# by SIGTERM, SIGHUP or SIGINT leaves no temporary file (SIGINT exits 130).
# usage: output_paths.sh <simtrain> <shared-dir>
set -u
ST=$1
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
EX="$(dirname "$0")/../../examples/pipeline2.json"
no_temps() { ! ls "$1" | grep -q '\.tmp\.' || fail "$2: a temporary file is left: $(ls "$1")"; }

# ---- a write that fails: RLIMIT_FSIZE stands in for a full disk -------------
for what in "run --workload $EX --cluster node8 -o $tmp/lim/r.h5" \
            "gen --model llama3-8b --layout tp=4,pp=2,mbs=1,gbs=64 --gpus 16 -o $tmp/lim/w.json"; do
  mkdir -p "$tmp/lim"
  # shellcheck disable=SC2086
  err=$( (trap '' XFSZ; ulimit -f 4; "$ST" $what) 2>&1 >/dev/null); rc=$?
  [ $rc -eq 2 ] || fail "$what under a 4 KiB file limit: exit $rc, want 2: $err"
  grep -q '^simtrain: error: ' <<<"$err" || fail "$what: no error line: $err"
  [ "$(wc -l <<<"$err")" -eq 1 ] || fail "$what: more than one line on stderr: $err"
  [ -z "$(ls "$tmp/lim")" ] || fail "$what: left $(ls "$tmp/lim")"
  rm -rf "$tmp/lim"
done
echo ok
