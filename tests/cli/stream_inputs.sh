#!/bin/bash
# Inputs are read once, as streams: a trace, a cluster spec, a SimGrid XML
# platform or a model spec given as a FIFO (with or without its suffix) or
# as '-' (standard input, plain or gzip) gives the same prediction as the
# file itself; so does a
# gzip-compressed XML platform (SimGrid loads the copy read once).  Each read has a time limit: an
# input opened twice blocks on the FIFO's second open (it hung).
# usage: stream_inputs.sh <simtrain> <shared-dir>
set -u
ST=$1
fail() { echo "FAIL: $*"; exit 1; }
D="$(cd "$(dirname "$0")/../data" && pwd)"
EX="$(cd "$(dirname "$0")/../../examples" && pwd)/pipeline2.json"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
step() { grep -o '"step_time_s":[^,]*'; }
"$ST" platform node8:1 -o "$tmp/p.xml" >/dev/null || fail "platform -o"

# format | file | extra arguments (a trace: --trace FORMAT:PATH; a cluster:
# --workload pipeline2 --cluster PATH)
cases=$(cat <<EOT
smpi|$D/smpi_tiny.txt|--cluster node8
astra|$D/astra_tiny.txt|--gpus 8 --cluster node8
kineto|$D/kineto_ddp/rank0.trace.json|--cluster node8
chakra|${2:-../shared}/peer-astra/transformer_L10.0.et|--cluster node8
cluster.json|$D/one_nic.json|
cluster.xml|$tmp/p.xml|
EOT
)
n=0
while IFS='|' read -r fmt file extra; do
  [ -n "$fmt" ] || continue
  [ -f "$file" ] || { echo "skip: $file is absent"; continue; }
  n=$((n + 1))
  case $fmt in
    cluster.*) suffix=${fmt#cluster}
               args() { echo "--workload $EX --cluster $1"; } ;;
    *) suffix=.in
       args() { echo "--trace $fmt:$1 $extra"; } ;;
  esac
  # shellcheck disable=SC2046
  ref=$("$ST" run $(args "$file") --json --quiet 2>"$tmp/err" | step)
  [ -n "$ref" ] || fail "$fmt: the file itself does not run: $(cat "$tmp/err")"
  fifo="$tmp/in$n$suffix"
  mkfifo "$fifo"
  (cat "$file" >"$fifo" &)
  # shellcheck disable=SC2046
  got=$(timeout 30 "$ST" run $(args "$fifo") --json --quiet 2>"$tmp/err" | step)
  [ "$got" = "$ref" ] || fail "$fmt as a FIFO: '$got', want '$ref': $(cat "$tmp/err")"
  # standard input, plain and gzip (a cluster spec too: JSON, or XML by its '<')
  # shellcheck disable=SC2046
  got=$(timeout 30 "$ST" run $(args -) --json --quiet <"$file" 2>"$tmp/err" | step)
  [ "$got" = "$ref" ] || fail "$fmt on standard input: '$got', want '$ref': $(cat "$tmp/err")"
  # shellcheck disable=SC2046
  got=$(gzip -c "$file" | timeout 30 "$ST" run $(args -) --json --quiet 2>"$tmp/err" | step)
  [ "$got" = "$ref" ] || fail "$fmt gzip on standard input: '$got', want '$ref': $(cat "$tmp/err")"
  # a FIFO without the suffix (as a shell's <(...) gives /dev/fd/N)
  plain="$tmp/plain$n"
  mkfifo "$plain"
  (cat "$file" >"$plain" &)
  # shellcheck disable=SC2046
  got=$(timeout 30 "$ST" run $(args "$plain") --json --quiet 2>"$tmp/err" | step)
  [ "$got" = "$ref" ] || fail "$fmt as a FIFO without a suffix: '$got', want '$ref': $(cat "$tmp/err")"
done <<<"$cases"
ref=$("$ST" run --workload "$EX" --cluster "$tmp/p.xml" --json --quiet | step)
gzip -c "$tmp/p.xml" >"$tmp/z.xml"
got=$("$ST" run --workload "$EX" --cluster "$tmp/z.xml" --json --quiet 2>&1 | step)
[ -n "$ref" ] && [ "$got" = "$ref" ] || fail "a gzip XML platform: '$got', want '$ref'"

# A model spec (a Hugging Face config here) on standard input and as a FIFO;
# a search reads it once too.
M=$D/hf/llama-3.1-8b.json
margs="--layout tp=8,gbs=8 --cluster node8 --json --quiet"
# shellcheck disable=SC2086
ref=$("$ST" run --model "$M" $margs | step)
[ -n "$ref" ] || fail "the model spec itself does not run"
# shellcheck disable=SC2086
got=$(timeout 30 "$ST" run --model - $margs <"$M" 2>"$tmp/err" | step)
[ "$got" = "$ref" ] || fail "a model spec on standard input: '$got', want '$ref': $(cat "$tmp/err")"
mkfifo "$tmp/model"
(cat "$M" >"$tmp/model" &)
# shellcheck disable=SC2086
got=$(timeout 30 "$ST" run --model "$tmp/model" $margs 2>"$tmp/err" | step)
[ "$got" = "$ref" ] || fail "a model spec as a FIFO: '$got', want '$ref': $(cat "$tmp/err")"
out=$(timeout 60 "$ST" search --model - --cluster node8 --gbs 8 --top 1 <"$M" 2>"$tmp/err")
grep -q '^best: simtrain run --model - ' <<<"$out" || fail "search on a model from standard input: $(cat "$tmp/err")"
grep -q '^best: simtrain run --model - .*  # with the same model spec on standard input$' <<<"$out" ||
  fail "search on a model from standard input: the best command does not say the spec comes on standard input again"
out=$(timeout 60 "$ST" search --model megatron-1.7b --cluster - --gbs 8 --top 1 <"$(dirname "$0")/../../platforms/data/presets/node8.json" 2>"$tmp/err")
grep -q '^best: simtrain run --model megatron-1.7b .* --cluster -  # with the same cluster spec on standard input$' <<<"$out" ||
  fail "search on a cluster from standard input: $(grep '^best' <<<"$out") $(cat "$tmp/err")"
# Two inputs cannot both be standard input.
err=$("$ST" run --model - --layout tp=8 --cluster - </dev/null 2>&1); rc=$?
[ $rc -eq 1 ] && [ "$err" = "simtrain: error: --cluster and --model both read standard input ('-'): it can feed one of them" ] ||
  fail "two inputs on standard input: exit $rc, '$err'"
echo "ok ($n inputs and a model spec as FIFOs and standard input)"
