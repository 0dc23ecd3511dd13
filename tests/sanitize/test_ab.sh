#!/usr/bin/env bash
# Tests bench/reductions/ab.sh without a GPU (a ctest test): fake kfuse binaries print the
# `program (one CUDA graph)` line of `kfuse run --bench` (in us, ms or not at all) and log
# each call, so the run order (A, B1, B2, B2, B1, A per case), the columns and the ratios can
# be checked.
#   tests/sanitize/test_ab.sh SOURCE_DIR TMPDIR
set -uo pipefail
src=$1 tmp=$2
script=$src/bench/reductions/ab.sh
rm -rf "$tmp" && mkdir -p "$tmp/kf"
fake() { # NAME TIME UNIT: a kfuse whose graph takes TIME UNIT ("none": no program line)
  cat >"$tmp/$1" <<F
#!/usr/bin/env bash
echo "$1 \$(basename "\$2")" >>"$tmp/calls"
[ "$2" = none ] && { echo "kfuse run: error: out of memory"; exit 1; }
echo "program (one CUDA graph)     $2 $3   predicted 1.00 us"
F
  chmod +x "$tmp/$1"
}
fake a 100 us; fake b 90 us; fake c 0.12 ms; fake broken none x
touch "$tmp/kf/x.kf" "$tmp/kf/y.kf"
source "$src/tests/sanitize/expect.sh"
expect one-b 0 'x +100 +90 +90 +100 +0\.900' bash "$script" "$tmp/a" "$tmp/b" "$tmp/kf" 'x*'
: >"$tmp/calls"
expect two-bs 0 'y +100 +90 +90 +120 +120 +100 +0\.900 +1\.200' \
  bash "$script" "$tmp/a" "$tmp/b,$tmp/c" "$tmp/kf"
expect two-bs-header 0 'case +A1_us +B1a_us +B1b_us +B2a_us +B2b_us +A2_us +B1/A +B2/A' \
  bash "$script" "$tmp/a" "$tmp/b,$tmp/c" "$tmp/kf" 'x*'
expect failed-run 0 'x +100 +NA +NA +100 +0\.000' bash "$script" "$tmp/a" "$tmp/broken" "$tmp/kf" 'x*'
# The order of the calls of the two-bs run: per case A B C C B A.
want=$(printf '%s\n' 'a x.kf' 'b x.kf' 'c x.kf' 'c x.kf' 'b x.kf' 'a x.kf' \
                      'a y.kf' 'b y.kf' 'c y.kf' 'c y.kf' 'b y.kf' 'a y.kf')
got=$(head -12 "$tmp/calls")
if [ "$got" = "$want" ]; then echo "ok   order"; else
  echo "FAIL order:"; echo "$got"; fails=$((fails + 1)); fi
[ $fails -eq 0 ]
