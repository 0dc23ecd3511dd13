#!/usr/bin/env bash
# Tests tools/gpu_suite.sh's plumbing without a GPU (a ctest test): a fake kfuse_gpu_tests
# lists cases whose names need escaping in a Catch2 test spec, checks that each run gets
# exactly its own case's escaped name, fails the cases named "bad ..." and records the order
# of the serial ones; and the real kfuse_gpu_tests, which skips (77) on a machine without a
# device.
#   tests/sanitize/test_gpu_suite.sh SOURCE_DIR REAL_BIN_DIR TMPDIR
set -uo pipefail
src=$1 realbin=$2 tmp=$3
script=$src/tools/gpu_suite.sh
rm -rf "$tmp" && mkdir -p "$tmp/bin"
cat >"$tmp/bin/kfuse_gpu_tests" <<'F'
#!/usr/bin/env bash
[ "${FAKE_TESTS:-}" = skip ] && { echo "kfuse_gpu_tests: no CUDA driver: skipped" >&2; exit 77; }
if [ "${1:-}" = --list-test-names-only ]; then
  case "$2" in
    '[no-such-tag]') exit 0 ;;
    '~[fault]~[timing]') [ "${FAKE_TESTS:-}" = empty ] && exit 0
       printf '%s\n' 'GEMM: a, b [x] and c\d' 'plain one' 'bad one'; exit 3 ;;
    '[fault],[timing]') [ "${FAKE_TESTS:-}" = empty ] && exit 0
       printf '%s\n' 'timing: alone' 'fault: alone'; exit 2 ;;
  esac
  exit 9
fi
case "$1" in
  'GEMM: a\, b \[x\] and c\\d'|'plain one'|'timing: alone'|'fault: alone') echo "ran [$1]"
    [ "$1" = 'timing: alone' ] || [ "$1" = 'fault: alone' ] && echo "$1" >>"$FAKE_ORDER"; exit 0 ;;
  'bad one') echo "ran bad"; exit 1 ;;
esac
echo "unexpected spec [$1]"; exit 5
F
chmod +x "$tmp/bin/kfuse_gpu_tests"
export FAKE_ORDER=$tmp/order
source "$src/tests/sanitize/expect.sh"
expect missing-binary 2 'no .*/nobin/kfuse_gpu_tests' "$script" "$tmp/nobin" "$tmp/o0"
if "$realbin/kfuse_gpu_tests" --list-test-names-only '[no-such-tag]' >/dev/null 2>&1; [ $? -eq 77 ]; then
  expect real-binary-no-device 77 'no CUDA device: skipped' "$script" "$realbin" "$tmp/o1"
else
  echo "--   real-binary-no-device: not run (a device is present)"
fi
expect fake-skip 77 'no CUDA device: skipped' env FAKE_TESTS=skip "$script" "$tmp/bin" "$tmp/o2"
expect empty-listing 2 'listed no test cases' env FAKE_TESTS=empty "$script" "$tmp/bin" "$tmp/o3"
expect one-fails 1 'gpu_suite: 4 passed, 1 failed, 0 skipped' env JOBS=3 "$script" "$tmp/bin" "$tmp/o4"
grep -q '^FAIL .*bad one  (exit 1)$' "$tmp/o4/summary.txt" && [ "$(grep -c '^PASS' "$tmp/o4/summary.txt")" -eq 4 ] &&
  grep -q 'ran \[GEMM: a\\, b \\\[x\\\] and c\\\\d\]' "$tmp"/o4/*.log && [ "$(ls "$tmp"/o4/*.log | wc -l)" -eq 5 ] &&
  echo "ok   one-fails-logs" || { echo "FAIL one-fails-logs"; cat "$tmp/o4/summary.txt" "$tmp"/o4/*.log; fails=$((fails + 1)); }
[ "$(tr '\n' ' ' <"$FAKE_ORDER")" = 'timing: alone fault: alone ' ] && echo "ok   serial-in-order" ||
  { echo "FAIL serial-in-order"; cat "$FAKE_ORDER"; fails=$((fails + 1)); }
echo "$fails failed"
[ $fails -eq 0 ]
