#!/usr/bin/env bash
# A/B of kfuse binaries on reduction cases, on one GPU in one call: each case's file is timed
# by `kfuse run --bench` (one CUDA graph replay per sample, median of REPS) with binary A,
# then each B in turn, then the Bs in reverse, then A again (A B1 B2 B2 B1 A), so a drift of
# the card's clocks or temperature over the run falls on all of them alike. Prints one line
# per case: A's two times, each B's two, and each B/A of the medians' means.
#
#   bench/reductions/ab.sh KFUSE_A KFUSE_B[,KFUSE_C...] DIR [CASE_GLOB]
#
#   KFUSE_B    one binary, or several separated by commas: variants timed against A in the
#              same pass over the cases
#   DIR        the .kf files (bench/reductions/cases.py --out DIR)
#   CASE_GLOB  which files of DIR (default *.kf)
#   REPS       --reps for --bench (default 30)
#   LOG        every run's whole output, appended (default: dropped)
set -uo pipefail
a=$1 dir=$3 glob=${4:-*.kf}
IFS=, read -r -a bs <<<"$2"
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
n=${#bs[@]}
names=(B)
[ $n -gt 1 ] && for ((i = 0; i < n; i++)); do names[i]=B$((i + 1)); done
head="$(printf '%-34s %9s' case A1_us)"
for name in "${names[@]}"; do head+="$(printf ' %9s %9s' "${name}a_us" "${name}b_us")"; done
head+="$(printf ' %9s' A2_us)"
for name in "${names[@]}"; do head+="$(printf ' %6s' "$name/A")"; done
echo "$head"
for f in "$dir"/$glob; do
  c=$(basename "$f" .kf)
  a1=$(us "$a" "$f")
  first=() second=()
  for ((i = 0; i < n; i++)); do first[i]=$(us "${bs[i]}" "$f"); done
  for ((i = n - 1; i >= 0; i--)); do second[i]=$(us "${bs[i]}" "$f"); done
  a2=$(us "$a" "$f")
  line="$(printf '%-34s %9s' "$c" "$a1")"
  for ((i = 0; i < n; i++)); do line+="$(printf ' %9s %9s' "${first[i]}" "${second[i]}")"; done
  line+="$(printf ' %9s' "$a2")"
  for ((i = 0; i < n; i++)); do
    line+="$(awk -v a1="$a1" -v a2="$a2" -v b1="${first[i]}" -v b2="${second[i]}" 'BEGIN {
      r = (a1 != "NA" && a2 != "NA" && b1 != "NA" && b2 != "NA") ? (b1 + b2) / (a1 + a2) : 0
      printf " %6.3f", r }')"
  done
  echo "$line"
done
