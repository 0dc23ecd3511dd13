#!/usr/bin/env bash
# Runs the whole GPU test suite with its test cases in parallel processes, so that it fits
# one device call: the NVRTC compiles and the interpreter's checks take CPU time, and one
# process runs them one after another. Every test case is its own kfuse_gpu_tests process,
# JOBS of them at a time (the kernel cache's disk entries are written atomically, so they
# can share KFUSE_CACHE_DIR); the cases that time something or make the driver fail on
# purpose ([timing], [fault]) then run one at a time, with the GPU to themselves.
#
#   tools/gpu_suite.sh [BIN_DIR [OUT_DIR]]
#
#   BIN_DIR   holds kfuse_gpu_tests (default build/bin)
#   OUT_DIR   gets one log per test case (NN.log, its name on the first line) and
#             summary.txt, one line per case: PASS/FAIL/SKIP, seconds, name (default $OUT,
#             else ./gpu-suite-logs)
#   JOBS      processes at a time for the parallel part (default: cores / 2, at least 1)
#   KFUSE_GPU_QUICK  passed through (quick mode, GpuHarness.h)
#   SPEC      only the cases that also match this Catch2 tag, e.g. SPEC='[reduce]'
#
# Exit status: 0 when every case passed, 1 when one failed, 2 for a missing binary or an
# empty listing, 77 when the binary skips (no CUDA device).
set -uo pipefail
bin=${1:-build/bin}
out=${2:-${OUT:-./gpu-suite-logs}}
exe=$bin/kfuse_gpu_tests
[ -x "$exe" ] || { echo "gpu_suite: no test binary $exe" >&2; exit 2; }
mkdir -p "$out"
jobs=${JOBS:-$(( $(nproc) / 2 ))}
[ "$jobs" -ge 1 ] || jobs=1

serial_spec='[fault],[timing]'
list() { # test names matching spec $1, one a line
  "$exe" --list-test-names-only "$1" 2>/dev/null | sed -e '/^$/d' -e '/ test cases\{0,1\}$/d' -e 's/^ *//'
}
# Listing no case exits 0 with a device and 77 without (Catch2 exits with the count listed).
"$exe" --list-test-names-only '[no-such-tag]' >/dev/null 2>&1
rc=$?
[ $rc -eq 77 ] && { echo "gpu_suite: no CUDA device: skipped"; exit 77; }
[ -n "${SPEC:-}" ] && serial_spec="$SPEC[fault],$SPEC[timing]"
mapfile -t parallel < <(list "${SPEC:-}~[fault]~[timing]")
mapfile -t serial < <(list "$serial_spec")
if [ ${#parallel[@]} -eq 0 ] && [ ${#serial[@]} -eq 0 ]; then
  echo "gpu_suite: $exe listed no test cases" >&2
  exit 2
fi

# One case: its name escaped for a Catch2 test spec (',' '[' ']' '\' take a backslash).
run_case() {
  local idx=$1 name=$2 log t0 rc status spec
  log=$(printf '%s/%02d.log' "$out" "$idx")
  spec=$(printf '%s' "$name" | sed -e 's/[],[\\]/\\&/g')
  t0=$EPOCHREALTIME
  { echo "== $name"; "$exe" "$spec" 2>&1; } >"$log"
  rc=$?
  case $rc in 0) status=PASS ;; 77) status=SKIP ;; *) status=FAIL ;; esac
  awk -v s="$status" -v a="$t0" -v b="$EPOCHREALTIME" -v n="$name" -v r="$rc" \
    'BEGIN { printf "%s %7.1f s  %s%s\n", s, b - a, n, (s == "FAIL" ? "  (exit " r ")" : "") }'
}
export -f run_case
export exe out

: >"$out/summary.txt"
i=0
{
  for n in "${parallel[@]}"; do i=$((i + 1)); printf '%d\0%s\0' "$i" "$n"; done
} | xargs -0 -n 2 -P "$jobs" bash -c 'run_case "$0" "$1"' >>"$out/summary.txt"
i=${#parallel[@]}
for n in "${serial[@]}"; do
  i=$((i + 1))
  run_case "$i" "$n" >>"$out/summary.txt"
done
sort -k1,1 -s "$out/summary.txt" -o "$out/summary.txt"
cat "$out/summary.txt"
pass=$(grep -c '^PASS' "$out/summary.txt")
fail=$(grep -c '^FAIL' "$out/summary.txt")
skip=$(grep -c '^SKIP' "$out/summary.txt")
echo "gpu_suite: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
