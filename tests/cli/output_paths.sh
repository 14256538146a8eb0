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
# ---- targets that are not regular files are refused and stay what they were --
GEN="gen --model llama3-8b --layout tp=4,pp=2,mbs=1,gbs=64 --gpus 16"
mkdir -p "$tmp/d"
"$ST" run --workload "$EX" --cluster node8 --timeline -o "$tmp/r.h5" >/dev/null || fail "run -o"
if mknod "$tmp/d/full" c 1 7 2>/dev/null; then
  for what in "run --workload $EX --cluster node8" "$GEN" "platform node8:1" \
              "export $tmp/r.h5 --perfetto" "plot $tmp/r.h5 --timeline"; do
    # shellcheck disable=SC2086
    err=$("$ST" $what -o "$tmp/d/full" 2>&1 >/dev/null); rc=$?
    [ $rc -eq 2 ] || fail "$what -o a device: exit $rc, want 2: $err"
    [ "$err" = "simtrain: error: cannot write '$tmp/d/full': it is a character device, not a regular file" ] ||
      fail "$what -o a device: $err"
    [ -c "$tmp/d/full" ] || fail "$what: the device node was replaced"
  done
else
  echo "skip: mknod is not permitted here (the full-device case is not tested)"
fi
mkfifo "$tmp/d/fifo"
err=$("$ST" $GEN -o "$tmp/d/fifo" 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] || fail "gen -o a FIFO: exit $rc: $err"
[ "$err" = "simtrain: error: cannot write '$tmp/d/fifo': it is a FIFO, not a regular file" ] || fail "FIFO: $err"
[ -p "$tmp/d/fifo" ] || fail "the FIFO was replaced"
mkdir "$tmp/d/dir"
err=$("$ST" run --workload "$EX" --cluster node8 -o "$tmp/d/dir" 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] || fail "run -o a folder: exit $rc: $err"
[ "$err" = "simtrain: error: cannot write '$tmp/d/dir': it is a directory, not a regular file" ] || fail "dir: $err"
[ -d "$tmp/d/dir" ] || fail "the folder was replaced"
no_temps "$tmp/d" "refused targets"

# ---- a symlink is written through to its target and stays a link ------------
mkdir -p "$tmp/s/real"
echo old >"$tmp/s/real/w.json"
ln -s real/w.json "$tmp/s/link.json"
"$ST" $GEN -o "$tmp/s/link.json" >/dev/null 2>&1 || fail "gen -o a symlink"
[ -L "$tmp/s/link.json" ] || fail "gen replaced the symlink"
grep -q '"programs"' "$tmp/s/real/w.json" || fail "the link's target was not written"
ln -s real/r.h5 "$tmp/s/r.h5"     # dangling: the target is created
"$ST" run --workload "$EX" --cluster node8 -o "$tmp/s/r.h5" >/dev/null || fail "run -o a dangling link"
[ -L "$tmp/s/r.h5" ] && [ -f "$tmp/s/real/r.h5" ] || fail "run -o a link: $(ls -l "$tmp/s" "$tmp/s/real")"
"$ST" report "$tmp/s/r.h5" >/dev/null || fail "the results file behind the link does not read"
ln -s real/t.json "$tmp/s/t.json"
"$ST" export "$tmp/r.h5" --perfetto -o "$tmp/s/t.json" >/dev/null 2>&1 || fail "export -o a link"
[ -L "$tmp/s/t.json" ] && [ -s "$tmp/s/real/t.json" ] || fail "export -o a link"
no_temps "$tmp/s" "symlinks"
no_temps "$tmp/s/real" "symlinks"

# ---- signals mid-write leave no temporary file ---------------------------------
# A large gzip-compressed workload takes a while to write: wait for its
# temporary file to appear, then signal.  Its programs must be many and
# long (ten stages, 256 micro-batches: 1.7 MB of gzip, written in half a
# second): a workload of many ranks but few programs (1,024 GPUs in 4
# programs) is written in milliseconds, too fast to catch.
BIG="gen --model llama3-70b --layout tp=8,pp=10,mbs=1,gbs=256 --gpus 80"
for sig in TERM HUP INT; do
  mkdir -p "$tmp/k"
  "$ST" $BIG -o "$tmp/k/w.json.gz" >/dev/null 2>"$tmp/k.err" &
  pid=$!
  for _ in $(seq 1 600); do
    ls "$tmp/k" | grep -q '\.tmp\.' && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.05
  done
  ls "$tmp/k" | grep -q '\.tmp\.' || { wait $pid; fail "SIG$sig: no temporary file seen while writing (too fast?)"; }
  kill -$sig $pid
  wait $pid; rc=$?
  case $sig in
    INT) [ $rc -eq 130 ] || fail "SIGINT: exit $rc, want 130"
         grep -qx 'simtrain: error: interrupted (SIGINT); temporary files removed' "$tmp/k.err" ||
           fail "SIGINT message: $(cat "$tmp/k.err")" ;;
    TERM) [ $rc -eq 143 ] || fail "SIGTERM: exit $rc, want 143 (killed by the signal)" ;;
    HUP) [ $rc -eq 129 ] || fail "SIGHUP: exit $rc, want 129 (killed by the signal)" ;;
  esac
  [ -z "$(ls "$tmp/k")" ] || fail "SIG$sig mid-write left: $(ls "$tmp/k")"
  rm -rf "$tmp/k"
done
# A run of a few seconds (the simulation, inside SimGrid, whose engine
# catches SIGINT itself) killed before it writes: exit status and no file.
LONG="run --model llama3-8b --layout tp=2,pp=4,mbs=1,gbs=1024 --cluster dgx-h100:1 --no-symmetry --no-closed-form"
for sig in INT TERM; do
  mkdir -p "$tmp/k"
  "$ST" $LONG -o "$tmp/k/r.h5" >/dev/null 2>"$tmp/k.err" &
  pid=$!
  sleep 1
  kill -0 $pid 2>/dev/null || { wait $pid; fail "the long run ended within 1 s: no signal test"; }
  kill -$sig $pid
  wait $pid; rc=$?
  want=$([ $sig = INT ] && echo 130 || echo 143)
  [ $rc -eq "$want" ] || fail "run, SIG$sig: exit $rc, want $want: $(cat "$tmp/k.err")"
  [ $sig != INT ] || grep -qx 'simtrain: error: interrupted (SIGINT); temporary files removed' "$tmp/k.err" ||
    fail "run, SIGINT message: $(cat "$tmp/k.err")"
  [ -z "$(ls "$tmp/k")" ] || fail "run, SIG$sig left: $(ls "$tmp/k")"
  rm -rf "$tmp/k"
done
echo ok
