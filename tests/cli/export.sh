#!/bin/bash
# export.sh — `simtrain export --perfetto` on the committed results fixture
# (6 timeline rows, one matched send/recv, 2 links).
set -u
simtrain=$1
here=$(cd "$(dirname "$0")" && pwd)
fixture=$here/../data/results-small.h5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { if eval "$2"; then :; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }

msg=$("$simtrain" export "$fixture" --perfetto -o "$tmp/t.json.gz" 2>&1); rc=$?
check "export exits 0" "[ $rc -eq 0 ]"
check "export says what it wrote" "[ \"\$msg\" = \"wrote '$tmp/t.json.gz': 4 ranks, 5 streams, 6 slices, 1 send/recv flows, 2 link counters\" ]"
check "gzip when named .gz" "gzip -t '$tmp/t.json.gz'"
trace=$(gzip -dc "$tmp/t.json.gz")
check "one slice per timeline row" "[ \$(grep -c '\"ph\":\"X\"' <<<\"\$trace\") -eq 6 ]"
check "rank process named" "grep -q '\"args\":{\"name\":\"rank 2 (gpu-1)\"}' <<<\"\$trace\""
check "nothing else left" "[ \"\$(ls '$tmp')\" = t.json.gz ]"

err=$("$simtrain" export "$fixture" -o "$tmp/t.json" 2>&1); rc=$?
check "no format exits 1" "[ $rc -eq 1 ]"
check "no format message" "[ \"\$err\" = \"simtrain: error: choose a format (--perfetto) (see 'simtrain export --help')\" ]"

err=$("$simtrain" export "$fixture" --perfetto -o "$tmp/no/t.json" 2>&1); rc=$?
check "bad output path exits 2" "[ $rc -eq 2 ]"
check "bad output path message" "grep -q \"^simtrain: error: trace '$tmp/no/t.json': cannot create\" <<<\"\$err\""

err=$("$simtrain" export "$fixture" --perfetto -o "$tmp/t.json" --group gpu 2>&1); rc=$?
check "bad --group exits 1" "[ $rc -eq 1 ]"
check "bad --group message" "[ \"\$err\" = \"simtrain: error: --group 'gpu' is not rank or node (see 'simtrain export --help')\" ]"
err=$("$simtrain" export "$fixture" --perfetto -o "$tmp/t.json" --group node 2>&1); rc=$?
check "--group node without GPUs per node exits 2" "[ $rc -eq 2 ]"
check "--group node without GPUs per node message" "[ \"\$err\" = \"simtrain: error: results '$fixture': '/config' cluster does not say how many GPUs a node has (node.gpus or gpus_per_node): group by rank instead\" ]"

[ $fails -eq 0 ] || exit 1
echo "export: all checks passed"
