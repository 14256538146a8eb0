#!/bin/bash
# pod-links.sh — one training step of llama3-70b on two pods of 1,024 H100
# (examples/clusters/two-h100-pods.json) as each pod's links to the
# data-centre network go from 3.2 Tb/s (8 x 400 Gb/s) down to 100 Gb/s, for
# two layouts: data parallelism across the pods (tp=8, pp=1, dp=256: the
# gradients cross) and the pipeline across them (tp=8, pp=2, dp=128: one stage
# per pod, the activations cross); each beside the same job on one fabric of
# 2,048 GPUs (dgx-h100:256).  Prints a table and draws it as an SVG.
#
#   examples/pod-links.sh [SIMTRAIN [OUT.svg]]
#       SIMTRAIN  the simtrain binary (default: build/simtrain)
#       OUT.svg   the picture (default: docs/img/pod-links.svg)
#
# Fourteen runs of about 10 s each on two cores (docs/platforms.md, "Clusters
# of pods", has the figures).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
simtrain=${1:-$here/../build/simtrain}
out=${2:-$here/../docs/img/pod-links.svg}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

model=llama3-70b
common=sp=1,mbs=1,gbs=512,zero=1,overlap_grad_reduce=1,overlap_param_gather=1
layouts="tp=8,pp=1,recompute=full,$common tp=8,pp=2,$common"
label() { case $1 in *pp=1,*) echo "DP across the pods (tp=8, pp=1, dp=256)" ;;
                     *) echo "the pipeline across them (tp=8, pp=2, dp=128)" ;; esac; }
# per pod: links x Gb/s (3.2 Tb/s, 1.6, 800, 400, 200, 100 Gb/s)
links="8x400 4x400 2x400 1x400 1x200 1x100"

field() { grep -o "\"$2\":[^,}]*" <<<"$1" | head -1 | cut -d: -f2; }

printf 'layout\tpod_Gbps\tstep_time_s\tpod_exposed_s\tpod_link_busy_s\tpod_link_bytes\tlabel\n' \
  >"$tmp/rows.tsv"
for layout in $layouts; do
  flat=$("$simtrain" run --model $model --layout "$layout" --cluster dgx-h100:256 --json --quiet)
  printf '%s\tflat\t%s\t0\t0\t0\t%s\n' "$layout" "$(field "$flat" step_time_s)" \
    "$(label "$layout")" >>"$tmp/rows.tsv"
  for l in $links; do
    n=${l%x*} g=${l#*x}
    sed "s/\"count\": 8, \"Gbps\": 400/\"count\": $n, \"Gbps\": $g/" \
      "$here/clusters/two-h100-pods.json" >"$tmp/pods-$l.json"
    json=$("$simtrain" run --model $model --layout "$layout" --cluster "$tmp/pods-$l.json" --json \
      --quiet)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$layout" $((n * g)) "$(field "$json" step_time_s)" \
      "$(field "$json" pod_exposed_s)" "$(field "$json" pod_link_busy_s)" \
      "$(field "$json" pod_link_bytes)" "$(label "$layout")" >>"$tmp/rows.tsv"
  done
done
column -t -s "$(printf '\t')" "$tmp/rows.tsv" 2>/dev/null || cat "$tmp/rows.tsv"

# The picture: step time (solid) and the exposed time crossing pods (dotted)
# against the pods' bandwidth on a log axis, one colour per layout, the same
# job on one fabric dashed.
awk -F '\t' -v model=$model '
function x(g) { return L + (log(g / 100) / log(2)) / 5 * W }
function y(v) { return T + H - v / top * H }
function esc(s) { gsub(/&/, "\\&amp;", s); gsub(/</, "\\&lt;", s); return s }
NR == 1 { next }
{
  if (!($1 in idx)) { idx[$1] = ++nl; name[nl] = $7 }
  k = idx[$1]
  if ($2 == "flat") { flat[k] = $3; next }
  np[k]++; g[k, np[k]] = $2; st[k, np[k]] = $3; ex[k, np[k]] = $4
  if ($3 > vmax) vmax = $3
}
END {
  L = 70; T = 50; W = 460; H = 300
  step = vmax > 20 ? 5 : vmax > 8 ? 2 : 1
  top = step * int(vmax / step + 1)
  col[1] = "#1f77b4"; col[2] = "#d62728"
  printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"900\" height=\"420\" "
  printf "font-family=\"sans-serif\" font-size=\"12\">\n"
  printf "<rect width=\"900\" height=\"420\" fill=\"white\"/>\n"
  printf "<text x=\"%d\" y=\"24\" font-size=\"15\">%s on two pods of 1,024 H100: step time against each pod&apos;s links to the data-centre network</text>\n", L, model
  for (v = 0; v <= top + 1e-9; v += step) {
    printf "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", L, y(v), L + W, y(v)
    printf "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", L - 6, y(v) + 4, v
  }
  split("100 200 400 800 1600 3200", ticks, " ")
  split("100 Gb/s,200 Gb/s,400 Gb/s,800 Gb/s,1.6 Tb/s,3.2 Tb/s", labels, ",")
  for (i = 1; i <= 6; i++) {
    printf "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>\n", x(ticks[i]), T, x(ticks[i]), T + H
    printf "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", x(ticks[i]), T + H + 18, labels[i]
  }
  printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", L, T + H, L + W, T + H
  printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", L, T, L, T + H
  printf "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">inter-pod bandwidth per pod (per direction, log scale)</text>\n", L + W / 2, T + H + 40
  printf "<text x=\"18\" y=\"%d\" transform=\"rotate(-90 18 %d)\" text-anchor=\"middle\">seconds per step</text>\n", T + H / 2, T + H / 2
  for (k = 1; k <= nl; k++) {
    pts = ""; ept = ""
    for (i = 1; i <= np[k]; i++) {
      pts = pts sprintf("%.1f,%.1f ", x(g[k, i]), y(st[k, i]))
      ept = ept sprintf("%.1f,%.1f ", x(g[k, i]), y(ex[k, i]))
      printf "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", x(g[k, i]), y(st[k, i]), col[k]
    }
    printf "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>\n", pts, col[k]
    printf "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" stroke-dasharray=\"2,3\"/>\n", ept, col[k]
    if (k in flat)
      printf "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\" stroke-dasharray=\"8,4\"/>\n", L, y(flat[k]), L + W, y(flat[k]), col[k]
    ly = T + 10 + (k - 1) * 70
    printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/>\n", L + W + 20, ly, L + W + 44, ly, col[k]
    printf "<text x=\"%d\" y=\"%d\">%s</text>\n", L + W + 50, ly + 4, esc(name[k])
    printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-dasharray=\"2,3\"/>\n", L + W + 20, ly + 18, L + W + 44, ly + 18, col[k]
    printf "<text x=\"%d\" y=\"%d\">exposed, crossing pods</text>\n", L + W + 50, ly + 22
    printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-dasharray=\"8,4\"/>\n", L + W + 20, ly + 36, L + W + 44, ly + 36, col[k]
    printf "<text x=\"%d\" y=\"%d\">one fabric (dgx-h100:256)</text>\n", L + W + 50, ly + 40
  }
  printf "<text x=\"%d\" y=\"%d\" fill=\"#555\">both: sp=1, mbs=1, gbs=512, zero=1, gradient</text>\n", L + W + 20, T + 170
  printf "<text x=\"%d\" y=\"%d\" fill=\"#555\">reduce and parameter gather overlapped;</text>\n", L + W + 20, T + 186
  printf "<text x=\"%d\" y=\"%d\" fill=\"#555\">pp=1 with full recomputation (memory)</text>\n", L + W + 20, T + 202
  printf "</svg>\n"
}' "$tmp/rows.tsv" >"$tmp/plot.svg"
mv "$tmp/plot.svg" "$out"
echo "wrote $out"
