#!/bin/bash
# plot.sh — `simtrain plot` on the committed results fixture: each picture
# is well-formed XML (xmllint, from Debian's libxml2-utils) with its parts.
set -u
simtrain=$1
here=$(cd "$(dirname "$0")" && pwd)
fixture=$here/../data/results-small.h5
if ! command -v xmllint >/dev/null; then
  echo "SKIP: xmllint not installed (apt-get install libxml2-utils)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$fixture" "$tmp/run.h5"
fails=0
check() { if eval "$2"; then :; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }

for kind in timeline breakdown links; do
  msg=$("$simtrain" plot "$tmp/run.h5" --$kind 2>&1); rc=$?
  check "$kind exits 0" "[ $rc -eq 0 ]"
  check "$kind default name" "[ \"\$msg\" = \"wrote '$tmp/run-$kind.svg'\" ]"
  check "$kind is well-formed XML" "xmllint --noout '$tmp/run-$kind.svg'"
done
n=$(xmllint --xpath 'count(//*[local-name()="g"][@id="ops"]/*[local-name()="rect"])' "$tmp/run-timeline.svg")
check "timeline: one rect per op" "[ '$n' = 6 ]"
n=$(xmllint --xpath 'count(//*[local-name()="g"][@id="bars"]/*[local-name()="rect"])' "$tmp/run-breakdown.svg")
check "breakdown: four rects per rank" "[ '$n' = 16 ]"
n=$(xmllint --xpath 'count(//*[local-name()="g"][@id="cells"]/*[local-name()="rect"])' "$tmp/run-links.svg")
check "links: three cells per link" "[ '$n' = 6 ]"

"$simtrain" plot "$tmp/run.h5" --timeline --ranks 0,3 -o "$tmp/t.svg" 2>/dev/null
n=$(xmllint --xpath 'count(//*[local-name()="g"][@id="ops"]/*[local-name()="rect"])' "$tmp/t.svg")
check "--ranks 0,3: rank 0's three ops and rank 3's one" "[ '$n' = 4 ]"

err=$("$simtrain" plot "$tmp/run.h5" 2>&1); rc=$?
check "no picture exits 1" "[ $rc -eq 1 ]"
check "no picture message" "[ \"\$err\" = \"simtrain: error: choose a picture (--timeline, --breakdown or --links; --scaling, --heatmap X Y or --memory for a sweep) (see 'simtrain plot --help')\" ]"

[ $fails -eq 0 ] || exit 1
echo "plot: all checks passed"
