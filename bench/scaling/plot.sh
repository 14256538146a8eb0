#!/usr/bin/env bash
# bench/scaling/plot.sh TSV > SVG — wall time (s) and peak RSS (MiB) against
# GPUs, log-log, from run.sh's table (columns gpus, wall_s, peak_rss_mib).
set -eu
awk -F'\t' '
NR == 1 { next }
{ n++; g[n] = $1; w[n] = $2; m[n] = $3 }
function fl(x) { return x >= 0 || x == int(x) ? int(x) : int(x) - 1 }
function lx(v) { return L + (log(v) - log(gmin)) / (log(gmax) - log(gmin)) * (W - L - R) }
function ly(v) { return T + (1 - (log(v) - log(ymin)) / (log(ymax) - log(ymin))) * (H - T - B) }
END {
  W = 720; H = 440; L = 70; R = 150; T = 40; B = 60
  gmin = g[1]; gmax = g[n]; ymin = 1e30; ymax = 0
  for (i = 1; i <= n; i++) {
    ymin = w[i] < ymin ? w[i] : ymin; ymax = m[i] > ymax ? m[i] : ymax
    ymin = m[i] < ymin ? m[i] : ymin; ymax = w[i] > ymax ? w[i] : ymax
  }
  ymin = 10 ^ fl(log(ymin) / log(10)); ymax = 10 ^ (fl(log(ymax) / log(10)) + 1)
  printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H
  printf "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
  printf "<text x=\"%d\" y=\"22\" font-size=\"14\">llama3-405b step (tp=8, pp=16): simulation cost against GPUs</text>\n", L
  for (e = ymin; e <= ymax * 1.0001; e *= 10) {
    printf "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", L, W - R, ly(e), ly(e)
    printf "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", L - 6, ly(e) + 4, e
  }
  for (i = 1; i <= n; i++) {
    printf "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#eee\"/>\n", lx(g[i]), lx(g[i]), T, H - B
    printf "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", lx(g[i]), H - B + 18, (g[i] >= 1024 ? int(g[i] / 1024) "k" : g[i])
  }
  printf "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">GPUs</text>\n", (L + W - R) / 2, H - 18
  split("w m", keys, " "); col["w"] = "#1f77b4"; col["m"] = "#d62728"
  name["w"] = "wall time (s)"; name["m"] = "peak RSS (MiB)"
  for (k = 1; k <= 2; k++) {
    s = ""
    for (i = 1; i <= n; i++) {
      v = keys[k] == "w" ? w[i] : m[i]
      s = s sprintf("%s%.1f,%.1f", i > 1 ? " " : "", lx(g[i]), ly(v))
      printf "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", lx(g[i]), ly(v), col[keys[k]]
    }
    printf "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>\n", s, col[keys[k]]
    printf "<text x=\"%d\" y=\"%d\" fill=\"%s\">%s</text>\n", W - R + 10, T + 20 * k, col[keys[k]], name[keys[k]]
  }
  printf "</svg>\n"
}' "$1"
