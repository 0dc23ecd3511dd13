#!/usr/bin/env bash
# The fixed cost of each further kernel of one CUDA graph (Target::graphKernelSeconds): a
# chain of N tanh over 4096 f32 (16 KB, so the bytes cost nothing), run by
# `kfuse run --bench` fused (one kernel) and unfused (N kernels, one CUDA graph). The
# difference over N - 1 is the cost of a further kernel; printed per N with kfuse's own
# prediction beside it.
#
#   bench/graphgap/run.sh [KFUSE]    (default build/bin/kfuse)
set -euo pipefail
kfuse=${1:-build/bin/kfuse}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "N fused_us unfused_us per_further_kernel_us predicted_x measured_x"
for n in 2 4 8 16 32 64; do
  f=$dir/chain$n.kf
  { echo "graph chain$n {"; echo "  %x0 = input f32[4096]"
    for ((i = 1; i <= n; i++)); do echo "  %x$i = tanh %x$((i - 1))"; done
    echo "  output %x$n"; echo "}"; } >"$f"
  "$kfuse" run "$f" --bench --reps 100 | awk -v n="$n" '
    function us(v, u) { return v * (u == "ms" ? 1000 : u == "ns" ? 1e-3 : u == "s" ? 1e6 : 1) }
    /^fused .* vs unfused/ {
      f = us($2, $3); u = us($6, $7); m = $10; p = $13
      printf "%d %.2f %.2f %.3f %s %s\n", n, f, u, (u - f) / (n - 1), p, m }'
done
