#!/usr/bin/env bash
# The Python package on the GPU machine, in one device call (under 5 minutes): the package's
# tests (API, backend mapping, torch CUDA tensors, transformers' LlamaMLP and our block
# against eager), then bench/python/run.py (kfuse vs eager vs Inductor in CUDA graphs, the
# fusion summary, the Python path's per-call host cost). Logs and python.json/python.md in
# $OUT (default ./device-logs).
#
#   bash python/tests/device_check.sh        (or: bench/device_run.sh python)
#
# libkfuse: $KFUSE_LIBRARY, else .devcarry/bin/libkfuse.so.0.1 (with libfmt.so.9 beside it),
# else the package's own lookup (build/lib, PREFIX/lib, the loader).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-./device-logs}
mkdir -p "$out"
if [[ -z "${KFUSE_LIBRARY:-}" && -e .devcarry/bin/libkfuse.so.0.1 ]]; then
  export KFUSE_LIBRARY=$PWD/.devcarry/bin/libkfuse.so.0.1
  export LD_LIBRARY_PATH=$PWD/.devcarry/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
export KFUSE_CACHE_DIR=${KFUSE_CACHE_DIR:-$PWD/.kfuse-cache}
py=${PYTHON:-python3}
rc=0
{
  echo "KFUSE_LIBRARY=${KFUSE_LIBRARY:-}"
  $py -c "import sys, kfuse; print(sys.version); print(kfuse.__version__, kfuse.library_version(), kfuse.device())"
} >"$out/python-tests.txt" 2>&1 || rc=1
for t in test_api test_torch_backend test_gpu; do
  timeout -k 5 100 $py python/tests/run_tests.py $t >"$out/python-$t.txt" 2>&1
  s=$?
  echo "$t: exit $s" | tee -a "$out/python-tests.txt"
  [[ $s -eq 0 || $s -eq 77 ]] || rc=1
done
timeout -k 5 "${BENCH_TIMEOUT:-240}" $py bench/python/run.py >"$out/python-bench.txt" 2>&1 || rc=1
tail -n 20 "$out/python-bench.txt"
echo "device_check: exit $rc"
exit $rc
