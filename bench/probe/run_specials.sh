#!/usr/bin/env bash
# Runs the special-values probe against PyTorch and then the checker, on whatever devices
# torch sees (CPU, and CUDA where torch.cuda.is_available()):
#   bench/probe/run_specials.sh OUTDIR
# writes OUTDIR/torch.json (torch_specials.py's output), OUTDIR/probe.log (its stdout and
# stderr) and OUTDIR/checker.log (specials_vs_torch's report, also printed). Exits with the
# checker's status: 0 when every disagreement is a listed deliberate deviation, 1 when one
# is not, 2 on bad input; 3 when the probe itself fails (no torch?).
#   PYTHON          the Python with torch (default python3)
#   KFUSE_BUILD_DIR the build folder with bin/specials_vs_torch (default build)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:?usage: bench/probe/run_specials.sh OUTDIR}
py=${PYTHON:-python3}
checker=${KFUSE_BUILD_DIR:-$root/build}/bin/specials_vs_torch
mkdir -p "$out"
if [ ! -x "$checker" ]; then
  echo "run_specials: no $checker (build it: ninja -C build specials_vs_torch)" >&2
  exit 2
fi
echo "run_specials: probe ($py, $("$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())' 2>&1 | tail -1))"
if ! "$py" "$here/torch_specials.py" "$out/torch.json" >"$out/probe.log" 2>&1; then
  echo "run_specials: the probe failed; see $out/probe.log:" >&2
  tail -5 "$out/probe.log" >&2
  exit 3
fi
cat "$out/probe.log"
"$checker" "$out/torch.json" 2>&1 | tee "$out/checker.log"
rc=${PIPESTATUS[0]}
echo "run_specials: checker exit $rc; outputs in $out"
exit "$rc"
