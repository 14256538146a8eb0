#!/bin/bash
# check_layout.sh — the data walk as the folders show it.
#
# Every #include "X" of a production source must go down the walk or stay in
# its folder:
#   workloads (base included) < platforms < traces, analysis, sim/engine,
#   sim/coll < sim/driver < sim/cli
# with sim/engine and sim/coll calling each other (the engine asks the
# collective layer for algorithms, which read the engine's public sim.h) and
# analysis/ including no sim/ header at all.  Exit 1 with every violation.
# With --sizes it also lists the source files over 900 lines and the
# functions over 150 lines (the house limits; not yet met everywhere).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "layout: skipped: not a git checkout (the check lists the tracked sources)"
  exit 77
fi
level() { # folder of a file -> its place in the walk (-1: not production)
  case $1 in
  workloads/*) echo 0 ;;
  platforms/*) echo 1 ;;
  traces/* | analysis/* | sim/engine/* | sim/coll/* | sim/sim.h) echo 2 ;;
  sim/driver/*) echo 3 ;;
  sim/cli/*) echo 4 ;;
  *) echo -1 ;;
  esac
}
group() { # the folder a level-2 file belongs to
  case $1 in
  sim/engine/* | sim/coll/* | sim/sim.h) echo sim ;;
  *) echo "${1%%/*}" ;;
  esac
}
# every header of the tree, by name
declare -A where
while IFS= read -r h; do where[$(basename "$h")]=$h; done < <(git ls-files '*.h' | grep -v '^tests/\|^bench/')
bad=0
while IFS= read -r f; do
  lf=$(level "$f")
  [ "$lf" -ge 0 ] || continue
  while IFS= read -r inc; do
    h=${where[$inc]:-}
    [ -n "$h" ] || continue # a generated or system header
    lh=$(level "$h")
    if [ "$lh" -gt "$lf" ]; then
      echo "$f includes $h: up the walk"
      bad=1
    elif [ "$lh" -eq 2 ] && [ "$lf" -eq 2 ] && [ "$(group "$f")" != "$(group "$h")" ]; then
      echo "$f includes $h: across the walk ($(group "$f") and $(group "$h") are side by side)"
      bad=1
    fi
  done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done < <(git ls-files '*.c' '*.cpp' '*.h' | grep -v '^tests/\|^bench/')
# every command file has its row in the command table, and every row its file
table=$(sed -n 's/^ *X(\([a-z_]*\)).*/\1/p' sim/cli/commands.h | sort)
files=$(git ls-files 'sim/cli/cmd_*.c' | sed 's|.*/cmd_||; s|\.c$||' | sort)
if [ "$table" != "$files" ]; then
  echo "sim/cli/commands.h: the table and the cmd_*.c files differ:"
  diff <(echo "$table") <(echo "$files") | sed -n 's/^</  only in the table:/p; s/^>/  no row for cmd_/p'
  bad=1
fi
if [ "${1:-}" = --sizes ]; then
  while IFS= read -r f; do
    [ "$(level "$f")" -ge 0 ] || continue
    n=$(wc -l <"$f")
    [ "$n" -le 900 ] || echo "size: $f has $n lines (limit 900)"
    awk -v f="$f" '/^\{/ { s = NR; name = prev } /^\}/ && s { if (NR - s - 1 > 150) printf "size: %s:%d a function of %d lines (limit 150): %s\n", f, s, NR - s - 1, name; s = 0 } { prev = $0 }' "$f"
  done < <(git ls-files '*.c' '*.cpp')
fi
[ $bad -eq 0 ] && echo "layout: every include goes down the walk"
exit $bad
