#!/usr/bin/env bash
# A/B of two kfuse binaries on reduction cases, on one GPU in one call: each case's file is
# timed by `kfuse run --bench` (one CUDA graph replay per sample, median of REPS) with binary
# A, then B, then B, then A, so a drift of the card's clocks or temperature over the run falls
# on both. Prints one line per case: A's two times, B's two, B/A of the medians' means.
#
#   bench/reductions/ab.sh KFUSE_A KFUSE_B DIR [CASE_GLOB]
#
#   DIR        the .kf files (bench/reductions/cases.py --out DIR)
#   CASE_GLOB  which files of DIR (default *.kf)
#   REPS       --reps for --bench (default 30)
#   LOG        every run's whole output, appended (default: dropped)
set -uo pipefail
a=$1 b=$2 dir=$3 glob=${4:-*.kf}
reps=${REPS:-30}
# The program's time in us: the `program (one CUDA graph)` line of --bench.
us() {
  "$1" run "$2" --bench --reps "$reps" >"$tmp" 2>&1
  cat "$tmp" >>"$log"
  awk '/^program \(one CUDA graph\)/ {
         v = $5; u = $6
         v *= (u == "ms" ? 1000 : u == "s" ? 1e6 : u == "ns" ? 1e-3 : 1); t = v }
       END { print (t == "" ? "NA" : t) }' "$tmp"
}
log=${LOG:-/dev/null}
[ "$log" = /dev/null ] || : >"$log"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
printf '%-34s %9s %9s %9s %9s %6s\n' case A1_us B1_us B2_us A2_us B/A
for f in "$dir"/$glob; do
  n=$(basename "$f" .kf)
  a1=$(us "$a" "$f"); b1=$(us "$b" "$f"); b2=$(us "$b" "$f"); a2=$(us "$a" "$f")
  awk -v n="$n" -v a1="$a1" -v b1="$b1" -v b2="$b2" -v a2="$a2" 'BEGIN {
    r = (a1 != "NA" && a2 != "NA" && b1 != "NA" && b2 != "NA") ? (b1 + b2) / (a1 + a2) : 0
    printf "%-34s %9s %9s %9s %9s %6.3f\n", n, a1, b1, b2, a2, r }'
done
