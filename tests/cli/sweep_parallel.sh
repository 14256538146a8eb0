#!/bin/bash
# sweep_parallel.sh — examples/parallel.sh: small.json in 4 shards run by GNU
# parallel, here and over two ssh "hosts" (an ssh stand-in that runs the
# command here through sh, as a remote login shell would), with a shared
# file system and with TRANSFER=1 (rsync, checked when installed), merged to
# the bytes of the unsharded sweep; every point in exactly one shard; shards with
# failed points (exit 64 + k) count as done, any other failure stops before
# the merge.
set -u
simtrain=$1
case $simtrain in /*) ;; *) simtrain=$PWD/$simtrain ;; esac
command -v parallel >/dev/null || { echo "skipped: GNU parallel is not installed"; exit 77; }
fails=0
check() { if eval "$2"; then :; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root=$(cd "$(dirname "$0")/../.." && pwd)
spec=$root/tests/data/sweep/small.json
export SIMTRAIN=$simtrain
export HOME=$tmp/home # parallel keeps its notes in ~/.parallel
mkdir -p "$HOME"

# small.json: 16 points, 4 of them failing (tp=16: tests/cli/sweep.sh counts
# them); the unsharded sweep exits 64 + 4.
"$simtrain" sweep "$spec" -o "$tmp/whole.h5" --quiet >/dev/null; rc=$?
check "the whole sweep exits 68 (got $rc)" "[ $rc -eq 68 ]"

rows_held() {
  local n=0 i k
  for i in 1 2 3 4; do
    k=$("$simtrain" report "$1/shard-$i.h5" --json | grep -o '"rows_held":[0-9]*' | cut -d: -f2)
    n=$((n + ${k:-0}))
  done
  echo $n
}

# ---- here: parallel -j 4 --------------------------------------------------------
bash "$root/examples/parallel.sh" "$spec" 4 "$tmp/local" >"$tmp/local.out" 2>"$tmp/local.err"; rc=$?
check "parallel.sh exits 0 (got $rc): $(tail -3 "$tmp/local.err")" "[ $rc -eq 0 ]"
check "the merged file is the unsharded sweep's, byte for byte" "cmp -s '$tmp/local/sweep.h5' '$tmp/whole.h5'"
check "the 4 shards hold the 16 points between them" "[ \"\$(rows_held '$tmp/local')\" = 16 ]"
check "4 shards ran, each once" "[ \$(awk -F'\t' 'NR > 1' '$tmp/local/joblog' | wc -l) -eq 4 ]"
# each shard of small.json holds one tp=16 point, so each exits 65
check "a shard with a failed point is logged and counted as done" \
  "[ \$(grep -c 'point(s) failed, file written' '$tmp/local.err') -eq 4 ]"

# ---- two hosts over ssh (a stand-in: no ssh server is needed) --------------------
cat >"$tmp/ssh" <<'SSH'
#!/bin/bash
# ssh stand-in: drops ssh's options and the host (logged), runs the command here
while [ $# -gt 0 ]; do
  case $1 in
    -[BbcDEeFIiJLlmOopQRSWw]) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
host=$1
shift
[ "${1:-}" = -- ] && shift
echo "$host: $*" >>"$(dirname "$0")/ssh.log"
# sshd starts the login shell with SHELL set (from the password file);
# parallel's remote side runs the job with $SHELL
export SHELL=/bin/sh
exec sh -c "$*"
SSH
chmod +x "$tmp/ssh"
printf 'hostA\nhostB\n' >"$tmp/hosts"
PARALLEL_SSH=$tmp/ssh bash "$root/examples/parallel.sh" "$spec" 4 "$tmp/remote" "$tmp/hosts" \
  >/dev/null 2>"$tmp/remote.err"; rc=$?
check "parallel.sh over two hosts exits 0 (got $rc): $(tail -3 "$tmp/remote.err")" "[ $rc -eq 0 ]"
check "both hosts ran shards" "grep -q '^hostA: ' '$tmp/ssh.log' && grep -q '^hostB: ' '$tmp/ssh.log'"
check "the joblog names the hosts" "[ \$(awk -F'\t' 'NR > 1 && (\$2 == \"hostA\" || \$2 == \"hostB\")' '$tmp/remote/joblog' | wc -l) -eq 4 ]"
check "merged over hosts: the unsharded sweep's bytes" "cmp -s '$tmp/remote/sweep.h5' '$tmp/whole.h5'"
check "over hosts, the 16 points are in the 4 shards" "[ \"\$(rows_held '$tmp/remote')\" = 16 ]"

# TRANSFER=1: no shared file system; the spec goes out and the shards come
# back over the ssh stand-in by rsync
if command -v rsync >/dev/null; then
  : >"$tmp/ssh.log"
  TRANSFER=1 PARALLEL_SSH=$tmp/ssh bash "$root/examples/parallel.sh" "$spec" 4 "$tmp/sent" hostA,hostB \
    >/dev/null 2>"$tmp/sent.err"; rc=$?
  check "TRANSFER=1 over two hosts exits 0 (got $rc): $(tail -3 "$tmp/sent.err")" "[ $rc -eq 0 ]"
  check "the spec went and the shards came back by rsync over ssh" \
    "grep -q '^host[AB]: .*rsync --server' '$tmp/ssh.log'"
  check "the shards ran in the hosts' work folders, not in OUTDIR" \
    "grep -q '^host[AB]: .*\.parallel/tmp' '$tmp/ssh.log'"
  check "TRANSFER=1: the unsharded sweep's bytes" "cmp -s '$tmp/sent/sweep.h5' '$tmp/whole.h5'"
  check "TRANSFER=1: the hosts' work folders are removed" "[ -z \"\$(ls -A '$HOME/.parallel/tmp' 2>/dev/null | grep -v sshlogin)\" ]"
else
  echo "note: rsync is not installed; TRANSFER=1 not checked"
fi

# ---- a shard that cannot run stops the merge ---------------------------------------
# a simtrain that fails shard 3 with a simulation error (exit 3), runs the others
cat >"$tmp/flaky" <<FLAKY
#!/bin/bash
case "\$*" in *"--shard 3/4"*) echo "simtrain: error: shard 3 broke" >&2; exit 3 ;; esac
exec "$simtrain" "\$@"
FLAKY
chmod +x "$tmp/flaky"
SIMTRAIN=$tmp/flaky bash "$root/examples/parallel.sh" "$spec" 4 "$tmp/flaky-out" >/dev/null 2>"$tmp/flaky.err"; rc=$?
check "a failed shard: parallel.sh exits 1 (got $rc)" "[ $rc -eq 1 ]"
check "the failed shard is named" "grep -q 'shard(s) failed (3)' '$tmp/flaky.err'"
check "nothing is merged" "[ ! -e '$tmp/flaky-out/sweep.h5' ]"
# an exit of 64..127 without a shard file is not success either
cat >"$tmp/nofile" <<'NOFILE'
#!/bin/bash
exit 66
NOFILE
chmod +x "$tmp/nofile"
SIMTRAIN=$tmp/nofile bash "$root/examples/parallel.sh" "$spec" 4 "$tmp/nofile-out" >/dev/null 2>"$tmp/nofile.err"; rc=$?
check "exit 66 without a file is a failure (got $rc)" "[ $rc -eq 1 ] && grep -q 'shard(s) failed (1 2 3 4)' '$tmp/nofile.err'"
# run shard 3 again by hand, as the message says, then merge
"$simtrain" sweep "$spec" --shard 3/4 -o "$tmp/flaky-out/shard-3.h5" --quiet >/dev/null
"$simtrain" merge "$tmp/flaky-out/sweep.h5" "$tmp/flaky-out"/shard-*.h5 --quiet; rc=$?
check "shard 3 run again, the merge is the unsharded sweep" "[ $rc -eq 0 ] && cmp -s '$tmp/flaky-out/sweep.h5' '$tmp/whole.h5'"

if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "sweep_parallel: all checks passed"
