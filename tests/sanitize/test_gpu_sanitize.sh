#!/usr/bin/env bash
# Tests tools/gpu_sanitize.sh's plumbing without a GPU or compute-sanitizer (a ctest test):
# a fake compute-sanitizer (prints the summary lines the real one prints, with FAKE_ERRORS
# errors) runs a fake kfuse_gpu_tests (FAKE_TESTS=pass|fail|hang|skip), and the real
# kfuse_gpu_tests, which skips (77) on a machine without a device.
#   tests/sanitize/test_gpu_sanitize.sh SOURCE_DIR REAL_BIN_DIR TMPDIR
set -uo pipefail
src=$1 realbin=$2 tmp=$3
script=$src/tools/gpu_sanitize.sh
rm -rf "$tmp" && mkdir -p "$tmp/bin"
cat >"$tmp/compute-sanitizer" <<'F'
#!/usr/bin/env bash
[ "${1:-}" = --version ] && { echo "Fake Compute Sanitizer, Version 0.0"; exit 0; }
tool=memcheck
while [ $# -gt 0 ]; do
  case "$1" in
    --tool) tool=$2; shift 2 ;;
    --error-exitcode) shift 2; break ;;
    --*) shift 2 ;;
    *) break ;;
  esac
done
echo "========= COMPUTE-SANITIZER"
"$@"; rc=$?
n=${FAKE_ERRORS:-0}
[ "$tool" = racecheck ] && echo "========= RACECHECK SUMMARY: $n hazards displayed ($n errors, 0 warnings)"
echo "========= ERROR SUMMARY: $n errors"
[ "$n" -gt 0 ] && exit 1
exit $rc
F
cat >"$tmp/bin/kfuse_gpu_tests" <<'F'
#!/usr/bin/env bash
[ "${1:-}" = --list-test-names-only ] && [ "${FAKE_TESTS:-pass}" != skip ] && { echo a; echo b; exit 2; }
echo "args: $* quick=${KFUSE_GPU_QUICK:-}"
case "${FAKE_TESTS:-pass}" in
  pass) echo "All tests passed (10 assertions in 2 test cases)"; exit 0 ;;
  fail) echo "test cases: 2 | 1 passed | 1 failed"; echo "assertions: 10 | 9 passed | 1 failed"; exit 1 ;;
  hang) sleep 20; exit 0 ;;
  skip) echo "kfuse_gpu_tests: no CUDA driver found: skipped" >&2; exit 77 ;;
esac
F
chmod +x "$tmp/compute-sanitizer" "$tmp/bin/kfuse_gpu_tests"
export COMPUTE_SANITIZER=$tmp/compute-sanitizer
source "$src/tests/sanitize/expect.sh"
expect missing-sanitizer 2 'compute-sanitizer not found' \
  env COMPUTE_SANITIZER=$tmp/nonexistent "$script" "$tmp/bin" "$tmp/o0"
expect missing-binary 2 'no .*/nobin/kfuse_gpu_tests' "$script" "$tmp/nobin" "$tmp/o1"
if "$realbin/kfuse_gpu_tests" --list-test-names-only >/dev/null 2>&1; [ $? -eq 77 ]; then
  expect real-binary-no-device 77 'memcheck: skipped: no device' "$script" "$realbin" "$tmp/o2"
else
  echo "--   real-binary-no-device: not run (a device is present)"
fi
expect fake-skip 77 'racecheck: skipped: no device' env FAKE_TESTS=skip "$script" "$tmp/bin" "$tmp/o3"
expect clean 0 'memcheck: 0 errors, 0 leaks, 0 CUDA API errors; tests: 0 test cases failed; exit main=0,fault=0; [0-9]+s; clean' \
  "$script" "$tmp/bin" "$tmp/o4"
grep -q 'args: ~\[fault\] quick=1' "$tmp/o4/memcheck.log" && grep -q -- '--report-api-errors no' "$tmp/o4/memcheck.log" &&
  grep -q 'racecheck: 0 errors, 0 hazards' "$tmp/o4/summary.txt" && echo "ok   clean-logs" ||
  { echo "FAIL clean-logs"; cat "$tmp/o4/memcheck.log" "$tmp/o4/summary.txt"; fails=$((fails + 1)); }
expect errors 1 'racecheck: 6 errors, 6 hazards displayed.*ERRORS' env FAKE_ERRORS=3 "$script" "$tmp/bin" "$tmp/o5"
expect test-failure 1 'memcheck: 0 errors.*tests: 2 test cases failed.*TESTS FAILED' \
  env FAKE_TESTS=fail KFUSE_SANITIZE_TOOLS=memcheck "$script" "$tmp/bin" "$tmp/o6"
expect timeout 1 'initcheck: .*TIMED OUT after 1s' \
  env FAKE_TESTS=hang KFUSE_SANITIZE_TOOLS=initcheck KFUSE_SANITIZE_TIMEOUT=1 "$script" "$tmp/bin" "$tmp/o7"
expect catch-args 0 'synccheck: 0 errors; tests: 0 test cases failed; exit custom=0' \
  env KFUSE_SANITIZE_TOOLS=synccheck "$script" "$tmp/bin" "$tmp/o8" -- '[gemm]' --durations yes
grep -q 'args: \[gemm\] --durations yes quick=1' "$tmp/o8/synccheck.log" && echo "ok   catch-args-passed" ||
  { echo "FAIL catch-args-passed"; cat "$tmp/o8/synccheck.log"; fails=$((fails + 1)); }
expect out-from-env 0 'logs in .*/o9' env OUT=$tmp/o9 KFUSE_SANITIZE_TOOLS=all "$script" "$tmp/bin"
[ -f "$tmp/o9/synccheck.log" ] && [ -f "$tmp/o9/initcheck.log" ] && echo "ok   all-tools-logs" ||
  { echo "FAIL all-tools-logs"; ls "$tmp/o9"; fails=$((fails + 1)); }
expect bad-tool 2 "unknown tool 'asan'" env KFUSE_SANITIZE_TOOLS=asan "$script" "$tmp/bin" "$tmp/o10"
echo "$fails failed"
[ $fails -eq 0 ]
