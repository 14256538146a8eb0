#!/bin/bash
# The command-line tests that feed simtrain inputs, run on a simtrain built
# with ASan and UBSan (the fuzz build, -DSIMTRAIN_FUZZ=ON, or
# -DSIMTRAIN_SANITIZE=ON).  The tests compare stderr exactly, so the
# sanitizers write to log files instead (log_path), and SimGrid's context
# switches make ASan warn once per process ("ASan is ignoring requested
# __asan_handle_no_return ... False positive error reports may follow"):
# that warning is the noise left out; any error report fails.  Leaks are not
# checked here: the front end leaves its option tables to the end of the
# process (the unit tests and the fuzz targets check leaks).
# usage: tests/sanitize_cli.sh BUILD_DIR      (about 2 minutes)
set -u
build=${1:?usage: tests/sanitize_cli.sh BUILD_DIR}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
tests='cli_(bad_inputs|stream_inputs|limits|output_paths|run|gen|export|report|trace_run|platform|coll|compare|plot)$'
ASAN_OPTIONS=log_path=$logs/asan:detect_leaks=0 \
UBSAN_OPTIONS=log_path=$logs/ubsan:print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$build" -R "$tests" --output-on-failure
rc=$?
bad=$(grep -l -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$logs"/* 2>/dev/null)
if [ -n "$bad" ]; then
  for f in $bad; do echo "== $f"; grep -v -E '__asan_handle_no_return|False positive error reports|sanitizers/issues/189' "$f" | head -n 40; done
  echo "FAIL: sanitizer reports above"
  exit 1
fi
[ $rc -eq 0 ] || exit $rc
echo "ok: no sanitizer reports ($(ls "$logs" | wc -l) processes logged only the context-switch warning)"
