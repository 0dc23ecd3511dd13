#!/usr/bin/env bash
# The sanitizer job: builds build-san/ (clang-14, ASan + UBSan, libFuzzer; via
# tools/setup.sh --sanitize), runs the whole CPU test suite there (unit + lit; a sanitizer
# report aborts its test), then runs each fuzzer for a fixed number of executions on a copy
# of its seed corpus. Exits non-zero on any test failure or fuzzer finding; a finding's
# input is kept in build-san/fuzz/artifacts/. Prints executions and run time per fuzzer.
#   KFUSE_FUZZ_RUNS_PARSER / KFUSE_FUZZ_RUNS_BUILDER  executions (default 1000000 / 300000:
#                          about 70 s / 140 s on one core; the builder's inputs run the pipeline)
#   KFUSE_FUZZ_RUNS_NPY    executions of NpyFuzzer (.npy files through readNpy; default 200000),
#                          beside the parser fuzzer once it is done
#   KFUSE_FUZZ_MAX_SECONDS a cap on each fuzzer's time (default 600)
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh --sanitize
san_build=${KFUSE_SAN_BUILD_DIR:-build-san}
ctest --test-dir "$san_build" --output-on-failure -j2

cap=${KFUSE_FUZZ_MAX_SECONDS:-600}
work="$san_build/fuzz"
rm -rf "$work"
mkdir -p "$work/artifacts"
export ASAN_OPTIONS=detect_leaks=1:check_initialization_order=1:strict_init_order=1
export UBSAN_OPTIONS=print_stacktrace=1
fuzz() { # NAME CORPUS RUNS [EXTRA...]: one fuzzer, one process, fixed seed (reproducible)
  local name=$1 corpus=$2 runs=$3
  shift 3
  mkdir -p "$work/corpus-$name"
  cp tests/fuzz/corpus/"$corpus"/* "$work/corpus-$name/"
  local t0=$SECONDS rc=0
  "$san_build/bin/$name" -runs="$runs" -max_total_time="$cap" -timeout=10 -rss_limit_mb=2048 \
      -seed=1 -print_final_stats=1 -artifact_prefix="$work/artifacts/$name-" "$@" \
      "$work/corpus-$name" > "$work/$name.log" 2>&1 || rc=$?
  local execs
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$name.log")
  echo "fuzz: $name: ${execs:-?} executions in $((SECONDS - t0)) s, exit $rc" \
       "(log $work/$name.log)" >> "$work/summary"
  return $rc
}
# The two fuzzers run side by side, one core each.
# The .npy fuzzer follows the parser's, the shorter run, on the same core.
(fuzz ParserFuzzer parser "${KFUSE_FUZZ_RUNS_PARSER:-1000000}" -dict=tests/fuzz/kf.dict &&
 fuzz NpyFuzzer npy "${KFUSE_FUZZ_RUNS_NPY:-200000}" -dict=tests/fuzz/npy.dict) & p1=$!
fuzz BuilderFuzzer builder "${KFUSE_FUZZ_RUNS_BUILDER:-300000}" & p2=$!
rc=0
wait $p1 || rc=1
wait $p2 || rc=1
cat "$work/summary"
if [ $rc -ne 0 ] || [ -n "$(ls -A "$work/artifacts")" ]; then
  echo "fuzz: FINDINGS (inputs in $work/artifacts):" >&2
  ls "$work/artifacts" >&2 || true
  grep -h -A30 -E 'fuzz finding|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error' \
       "$work"/*.log | head -80 >&2 || true
  exit 1
fi
echo "fuzz: no findings"
