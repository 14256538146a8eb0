#!/bin/bash
# two_nodes.sh — the views of a real 2-node run with overlap and pipeline
# bubbles (llama3-8b, tp=4 pp=2 dp=2 on node8:2, --timeline):
#   - every rank's compute + exposed comm + bubble + idle, read back from
#     /ranks with h5dump, equals the step time within 1 us;
#   - the Perfetto export (by rank and by node) is valid JSON whose slices
#     match the /timeline rows one to one;
#   - report names the collectives on the busiest links, in 100 columns;
#   - every SVG is well-formed; compare of the run with itself shows zero
#     deltas, and against the same run with 4x slower NICs the ratio of step
#     times equals the ratio of the two runs' step_time_s.
set -u
simtrain=$1
if ! command -v h5dump >/dev/null; then
  echo "SKIP: h5dump not installed (apt-get install hdf5-tools)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { if eval "$2"; then :; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }
json_num() { grep -o "\"$2\":[^,}]*" <<<"$1" | head -1 | cut -d: -f2; }

run=(run --model llama3-8b --layout tp=4,pp=2,mbs=1,gbs=16 --quiet --json)
json=$("$simtrain" "${run[@]}" --cluster node8:2 --timeline -o "$tmp/a.h5" 2>"$tmp/err"); rc=$?
check "run exits 0" "[ $rc -eq 0 ]"
check "nothing on stderr with --quiet" "[ ! -s '$tmp/err' ]"
check "one line on stdout" "[ \$(wc -l <<<\"\$json\") -eq 1 ]"
step=$(json_num "$json" step_time_s)
iters=$(json_num "$json" iterations)

# /ranks as h5dump prints it: the column names in order, then one {...} per row.
h5dump -d /ranks -m %.17g "$tmp/a.h5" >"$tmp/ranks.txt" 2>&1; rc=$?
check "h5dump reads /ranks" "[ $rc -eq 0 ]"
awk -v step="$step" -v iters="$iters" '
  /^ *H5T_[A-Z0-9_]+ "[a-z_]+";/ { gsub(/[";]/, "", $2); name[ncol++] = $2; next }
  /^ *\([0-9]+\): \{/ { k = 0; next }
  /^ *[-0-9.eE+]+,?$/ { v = $1; sub(/,$/, "", v); val[name[k++]] = v + 0; next }
  /^ *\},?$/ && k > 0 {
    rows++
    sum = val["compute_s"] + val["exposed_comm_s"] + val["bubble_s"] + val["idle_s"]
    d = sum - step * iters; if (d < 0) d = -d
    if (d > 1e-6) { printf "rank %d: parts add up to %.9f s, step %.9f s\n", val["rank"], sum, step * iters; bad++ }
    if (!(val["overlapped_comm_s"] > 0)) { printf "rank %d: no overlapped comm\n", val["rank"]; bad++ }
    if (val["bubble_s"] > 0) bubbly++
    k = 0
  }
  END {
    if (rows != 16) { printf "%d rows in /ranks, want 16\n", rows; bad++ }
    if (!bubbly) { print "no rank has a pipeline bubble"; bad++ }
    exit bad > 0
  }' "$tmp/ranks.txt" >"$tmp/ranks.err"; rc=$?
check "compute + exposed + bubble + idle = step time on every rank, with overlap $(cat "$tmp/ranks.err")" "[ $rc -eq 0 ]"

# Perfetto, by rank and by node
rows=$(h5dump -H -d /timeline "$tmp/a.h5" | grep -o 'SIMPLE { ( [0-9]*' | grep -o '[0-9]*$')
check "the run has a timeline" "[ \"\${rows:-0}\" -gt 0 ]"
valid_json() {
  if command -v python3 >/dev/null; then python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$1"
  elif command -v jq >/dev/null; then jq empty "$1"
  else echo "note: neither python3 nor jq: JSON validity not checked" >&2; fi
}
for group in rank node; do
  "$simtrain" export "$tmp/a.h5" --perfetto --group $group -o "$tmp/$group.json" 2>"$tmp/msg"; rc=$?
  check "export --group $group exits 0" "[ $rc -eq 0 ]"
  check "export --group $group is valid JSON" "valid_json '$tmp/$group.json'"
  n=$(grep -c '"ph":"X"' "$tmp/$group.json")
  check "export --group $group: $n slices for $rows timeline rows" "[ '$n' = '$rows' ]"
  check "export --group $group says so" "grep -q \", $rows slices, 128 send/recv flows,\" '$tmp/msg'"
done
check "by rank: 16 rank processes" "[ \$(grep -c '\"args\":{\"name\":\"rank [0-9]* (gpu-[0-9]*)\"}' '$tmp/rank.json') -eq 16 ]"
check "by node: node 0 and node 1" "grep -q '\"args\":{\"name\":\"node 1\"}' '$tmp/node.json' && [ \$(grep -c '\"args\":{\"name\":\"node [0-9]*\"}' '$tmp/node.json') -eq 2 ]"
check "by node: GPU 12 is on node 1" "grep -q '\"pid\":1,\"tid\":[0-9]*,\"args\":{\"name\":\"gpu-12 rank 12 compute\"}' '$tmp/node.json'"
check "collective slices name their members" "grep -q '\"comm\":\"tp/pp1/dp1/cp0\",\"nranks\":4,\"peers\":\"12-15\"' '$tmp/rank.json'"

# report
out=$("$simtrain" report "$tmp/a.h5"); rc=$?
check "report exits 0" "[ $rc -eq 0 ]"
check "report fits 100 columns" "[ \$(awk '{ if (length(\$0) > m) m = length(\$0) } END { print m }' <<<\"\$out\") -le 100 ]"
check "report names the collectives on the busiest links" "grep -A1 '^  nvl-10-down ' <<<\"\$out\" | grep -q '^      allreduce     tp/pp1/dp0/cp0 .* tp .* %$'"
check "report shows busy time per phase" "grep -q '^  busy in backward ' <<<\"\$out\""

# pictures
if command -v xmllint >/dev/null; then
  for kind in timeline breakdown links; do
    "$simtrain" plot "$tmp/a.h5" --$kind -o "$tmp/$kind.svg" 2>/dev/null
    check "plot --$kind is well-formed XML" "xmllint --noout '$tmp/$kind.svg'"
  done
fi

# compare: with itself, and with 4x slower NICs (the same cluster otherwise)
cat >"$tmp/slow.json" <<'EOF'
{"name":"node8-slow-nic","device":"H100-SXM",
 "node":{"gpus":8,"intra":{"kind":"nvswitch","links_per_gpu":18,"link_GBps":25,"lat_us":0.5},
         "nics":{"count":8,"Gbps":100,"lat_us":1}},
 "fabric":{"kind":"switch","switch_lat_us":0},"nodes":2}
EOF
json_b=$("$simtrain" "${run[@]}" --cluster "$tmp/slow.json" -o "$tmp/b.h5"); rc=$?
check "run on the slow fabric exits 0" "[ $rc -eq 0 ]"
step_b=$(json_num "$json_b" step_time_s)
check "slower NICs, longer step" "awk -v a=$step -v b=$step_b 'BEGIN { exit !(b > a) }'"
same=$("$simtrain" compare "$tmp/a.h5" "$tmp/a.h5" --json)
delta=$(grep -o '"delta":{[^}]*}' <<<"$same" | sed -n 2p)
values=$(sed 's/^"delta":{//; s/}$//' <<<"$delta" | tr ',' '\n' | cut -d: -f2)
# 16 deltas: the 13 step numbers, every one 0, and time, cost and energy to
# train, null without --tokens
all_zero() {
  [ "$(wc -l <<<"$1")" -eq 16 ] && [ "$(head -13 <<<"$1" | grep -cvx -- '-\?0')" -eq 0 ] &&
    [ "$(tail -3 <<<"$1" | grep -cx null)" -eq 3 ]
}
check "compare with itself: 16 deltas, the 13 of the step 0, the 3 to train null" "all_zero \"\$values\""
two=$("$simtrain" compare "$tmp/a.h5" "$tmp/b.h5" --json)
ratio=$(grep -o '"ratio":{[^}]*}' <<<"$two" | sed -n 2p)
r=$(json_num "$ratio" step_time_s)
check "compare: step ratio $r = $step_b / $step" "awk -v r=$r -v a=$step -v b=$step_b 'BEGIN { d = r - b / a; exit !(d < 1e-15 && d > -1e-15) }'"

[ $fails -eq 0 ] || exit 1
echo "two_nodes: all checks passed"
