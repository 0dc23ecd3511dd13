#!/usr/bin/env bash
# Runs the GPU test suite (kfuse_gpu_tests, in its quick mode KFUSE_GPU_QUICK=1) under
# compute-sanitizer, one log per tool, and prints one summary line per tool.
#
#   tools/gpu_sanitize.sh [BIN_DIR [OUT_DIR]] [-- CATCH_ARGS...]
#
#   BIN_DIR   holds kfuse_gpu_tests (default build/bin)
#   OUT_DIR   gets TOOL.log for each tool and summary.txt (default $OUT, else ./sanitize-logs)
#   CATCH_ARGS  a Catch2 test spec and options for kfuse_gpu_tests, e.g. -- '[gemm]'; with
#             none, each tool runs the suite twice: every case but [fault], with CUDA API
#             errors reported, then the [fault] cases with --report-api-errors no (they make
#             the driver refuse allocations and launches on purpose; each is checked by the
#             test itself, and the sanitizer would count every one as an error)
#
#   KFUSE_SANITIZE_TOOLS  tools to run, in order (default "memcheck racecheck"; "all" is
#                         memcheck racecheck initcheck synccheck)
#   KFUSE_SANITIZE_TIMEOUT  seconds per sanitizer run (default none); a run that passes it
#                         is stopped and reported as timed out, its log kept
#   COMPUTE_SANITIZER     the compute-sanitizer binary (default: PATH, then
#                         $CUDA_HOME/bin, /usr/local/cuda/bin)
#
# Flags per tool: memcheck --leak-check full; racecheck --racecheck-report all; initcheck and
# synccheck none; all with --error-exitcode 1. Exit status: 0 when every tool reported no
# error and the tests passed, 1 when a tool reported errors or a test failed or timed out,
# 2 for a missing compute-sanitizer or test binary, 77 when the tests skip (no GPU).
set -uo pipefail
cd "$(dirname "$0")/.."

bin=build/bin
out=${OUT:-./sanitize-logs}
pos=0
catch_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --) shift; catch_args=("$@"); break ;;
    -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) if [ $pos -eq 0 ]; then bin=$1; elif [ $pos -eq 1 ]; then out=$1; else
         echo "gpu_sanitize: unexpected argument '$1' (usage: tools/gpu_sanitize.sh [BIN_DIR [OUT_DIR]] [-- CATCH_ARGS...])" >&2; exit 2; fi
       pos=$((pos + 1)) ;;
  esac
  shift
done

tools=${KFUSE_SANITIZE_TOOLS:-memcheck racecheck}
[ "$tools" = all ] && tools="memcheck racecheck initcheck synccheck"
for t in $tools; do
  case "$t" in memcheck|racecheck|initcheck|synccheck) ;;
    *) echo "gpu_sanitize: unknown tool '$t' (memcheck racecheck initcheck synccheck)" >&2; exit 2 ;;
  esac
done

san=${COMPUTE_SANITIZER:-}
if [ -z "$san" ]; then
  for c in "$(command -v compute-sanitizer 2>/dev/null)" "${CUDA_HOME:+$CUDA_HOME/bin/compute-sanitizer}" \
           /usr/local/cuda/bin/compute-sanitizer; do
    if [ -n "$c" ] && [ -x "$c" ]; then san=$c; break; fi
  done
fi
if [ -z "$san" ] || [ ! -x "$san" ]; then
  echo "gpu_sanitize: error: compute-sanitizer not found (looked at \$COMPUTE_SANITIZER, PATH," \
       "\$CUDA_HOME/bin, /usr/local/cuda/bin); it comes with the CUDA toolkit" >&2
  exit 2
fi
tests=$bin/kfuse_gpu_tests
if [ ! -x "$tests" ]; then
  echo "gpu_sanitize: error: no $tests (build it: ninja -C build kfuse_gpu_tests)" >&2
  exit 2
fi
mkdir -p "$out" || exit 2
summary=$out/summary.txt
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }

# Without a device the binary exits 77 before any test: say so once, for every tool. (With
# one, Catch2's listing exits with the number of test cases listed, so only 77 together with
# the binary's "skipped" line counts.)
"$tests" --list-test-names-only >"$out/preflight.log" 2>&1
if [ $? -eq 77 ] && grep -q 'skipped' "$out/preflight.log"; then
  reason=$(grep -m1 'skipped' "$out/preflight.log")
  for t in $tools; do say "$t: skipped: no device ($reason)"; done
  exit 77
fi

export KFUSE_GPU_QUICK=1
say "gpu_sanitize: $("$san" --version 2>/dev/null | grep -m1 -i version || echo "$san"); KFUSE_GPU_QUICK=1; logs in $out"

# Sums "ERROR SUMMARY: N error(s)" lines (one per sanitizer run) of a log.
count() { grep -Eo "$1" "$2" | grep -Eo '[0-9]+' | awk '{s += $1} END {print s + 0}'; }

# Runs a command (appending to log $1) in its own process group; past
# KFUSE_SANITIZE_TIMEOUT seconds the whole group (the sanitizer and the tests) gets TERM,
# then KILL 30 s later, and $out/.timed_out is left behind.
run_limited() {
  local log=$1; shift
  rm -f "$out/.timed_out"
  set -m
  "$@" >>"$log" 2>&1 &
  local pid=$! dog=""
  set +m
  if [ -n "${KFUSE_SANITIZE_TIMEOUT:-}" ]; then
    set -m
    ( sleep "$KFUSE_SANITIZE_TIMEOUT"; touch "$out/.timed_out"; kill -TERM -- -"$pid" 2>/dev/null
      sleep 30; kill -KILL -- -"$pid" 2>/dev/null ) >/dev/null 2>&1 &
    dog=$!
    set +m
  fi
  wait "$pid"
  local rc=$?
  [ -n "$dog" ] && kill -- -"$dog" 2>/dev/null # the watchdog and its sleep
  return $rc
}

status=0
for t in $tools; do
  log=$out/$t.log
  : >"$log"
  case "$t" in
    memcheck) flags=(--tool memcheck --leak-check full) ;;
    racecheck) flags=(--tool racecheck --racecheck-report all) ;;
    *) flags=(--tool "$t") ;;
  esac
  if [ ${#catch_args[@]} -gt 0 ]; then
    parts=("custom")
  else
    parts=("main" "fault")
  fi
  start=$(date +%s)
  rcs="" timed_out=0 skipped=0
  for part in "${parts[@]}"; do
    extra=() spec=()
    case "$part" in
      custom) spec=("${catch_args[@]}") ;;
      main) spec=("~[fault]") ;;
      fault) spec=("[fault]"); extra=(--report-api-errors no) ;;
    esac
    cmd=("$san" "${flags[@]}" "${extra[@]}" --error-exitcode 1 "$tests" "${spec[@]}")
    echo "### ${cmd[*]}" >>"$log"
    run_limited "$log" "${cmd[@]}"
    rc=$?
    echo "### exit $rc" >>"$log"
    rcs="$rcs${rcs:+,}$part=$rc"
    [ -f "$out/.timed_out" ] && timed_out=1
    [ $rc -eq 77 ] && skipped=1
  done
  secs=$(( $(date +%s) - start ))
  errors=$(count 'ERROR SUMMARY: [0-9]+ error' "$log")
  runs=$(grep -Ec 'ERROR SUMMARY|RACECHECK SUMMARY' "$log")
  if [ "$t" = racecheck ]; then # "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)"
    rerr=$(grep -Eo 'RACECHECK SUMMARY: [0-9]+ hazards? displayed \([0-9]+ error' "$log" |
           grep -Eo '\([0-9]+' | tr -d '(' | awk '{s += $1} END {print s + 0}')
    [ "$rerr" -gt "$errors" ] && errors=$rerr
  fi
  # Catch2's closing lines, one per run: "All tests passed (...)" or
  # "test cases: N | P passed | F failed".
  finished=$(grep -Ec '^(All tests passed|test cases:.*failed)' "$log")
  failed=$(grep -E '^test cases:.*failed' "$log" | grep -Eo '[0-9]+ failed' | grep -Eo '[0-9]+' |
           awk '{s += $1} END {print s + 0}')
  extra_info=""
  if [ "$t" = racecheck ]; then
    hazards=$(count 'RACECHECK SUMMARY: [0-9]+ hazard' "$log")
    extra_info=", $hazards hazards displayed"
  fi
  if [ "$t" = memcheck ]; then
    leaks=$(grep -c 'Leaked [0-9]* bytes' "$log")
    api=$(grep -c 'Program hit' "$log")
    extra_info=", $leaks leaks, $api CUDA API errors"
  fi
  if [ $skipped -eq 1 ]; then
    verdict="skipped: no device"
  elif [ $timed_out -eq 1 ]; then
    verdict="TIMED OUT after ${KFUSE_SANITIZE_TIMEOUT}s (partial log)"; status=1
  elif [ "$errors" -gt 0 ]; then
    verdict="ERRORS"; status=1
  elif [ "$runs" -lt ${#parts[@]} ]; then
    verdict="INCOMPLETE: $runs of ${#parts[@]} runs printed the sanitizer's summary"; status=1
  elif [ "$finished" -lt ${#parts[@]} ]; then
    verdict="TESTS DID NOT FINISH ($finished of ${#parts[@]} runs printed Catch2's summary)"; status=1
  elif [ "$failed" -gt 0 ]; then
    verdict="TESTS FAILED ($failed test cases)"; status=1
  else
    verdict="clean"
  fi
  say "$t: $errors errors$extra_info; tests: $failed test cases failed; exit $rcs; ${secs}s; $verdict ($log)"
done
exit $status
