# cli_lib.sh — what the command-line tests (tests/cli/*.sh) share, sourced
# first thing with the test's arguments:
#     . "$(dirname "$0")/../cli_lib.sh" "$@"
# It sets simtrain (the binary, $1), a temporary folder tmp removed on exit,
# check NAME CONDITION (counts failures in fails) and the JSON field getters.
# (Not under tests/cli/: every script there is a test.)
set -u
simtrain=$1
fails=0
check() { if eval "$2"; then :; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the K-th (default first) "key":value of a JSON text, value as written
json_num() { grep -o "\"$2\":[^,}]*" <<<"$1" | sed -n "${3:-1}p" | cut -d: -f2; }
# the first "key":"string" of a JSON text, the string
json_str() { grep -o "\"$2\":\"[^\"]*\"" <<<"$1" | head -1 | cut -d'"' -f4; }
