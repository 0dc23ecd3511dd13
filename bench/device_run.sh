#!/usr/bin/env bash
# What one device call runs to check and measure kfuse on the GPU machine, from a build
# made on a development machine (carry build/bin; for peers, .peers/peers.py). Logs go to
# $OUT (or ./device-logs), at most 8 files, as the device tool brings back.
#
#   bench/device_run.sh tests   the whole GPU suite, cases in parallel (tools/gpu_suite.sh);
#                               its per-case logs packed into gpu-suite.tar.gz
#   bench/device_run.sh compile cold (empty kernel cache) and warm compile times of every
#                               example and bench graph, kernels on all cores and on one
#                               (`kfuse compile`'s own timing: NVRTC wall, per kernel)
#   bench/device_run.sh landing the checks a landing needs in one call: the GPU suite (as
#                               `tests`, SUITE_TIMEOUT default 360 s), the compile times
#                               (as `compile`), then `kfuse run --bench` on the mlp example
#                               and the Llama-3-8B blocks (fused vs unfused, predicted)
#   bench/device_run.sh bench   issue 5's cases: `kfuse report` then `kfuse run --bench`
#                               (one CUDA graph, predicted vs measured) for each graph of
#                               the table below, GemmBench (kfuse vs cuBLAS/cuBLASLt, per
#                               call and queued), then the PyTorch peers if .peers/peers.py
#                               is there; each in the same run, one after the other
#   bench/device_run.sh reductions  issue 19: softmax, log_softmax, RMSNorm, LayerNorm and
#                               add + RMSNorm, kfuse (`report`, `run --bench`) against eager
#                               and torch.compile in CUDA graphs, the device copy and an
#                               empty kernel measured in the same run
#                               (bench/reductions/run.py; RED_BUDGET seconds, default 400;
#                               RED_CASES, RED_DTYPES, RED_SHAPES select); prints the tables,
#                               reductions.json and reductions.md in $OUT
#   bench/device_run.sh epilogue  issue 17: a bare GEMM against the same GEMM with a 20-op
#                               epilogue and with two extra [M, N] tensors read, at three
#                               sizes (bench/epilogue/run.py); epilogue.md in $OUT
#   bench/device_run.sh reduce-ab  a reduction codegen change in one call: the GPU cases
#                               tagged [reduce] (REDUCE_SUITE_TIMEOUT, default 200 s), then
#                               bench/reductions/ab.sh of KFUSE_A (the baseline binary) against
#                               build/bin/kfuse (and the variants KFUSE_MORE, comma-separated)
#                               on AB_SHAPES (default the four large shapes, long rows first),
#                               every case, both dtypes, until AB_TIMEOUT (default 330 s);
#                               ab-SHAPE.txt per shape in $OUT
#   bench/device_run.sh decode-ab  a decode kernel change in one call: the GPU cases tagged
#                               [gemm] (DECODE_SUITE_TIMEOUT, default 200 s; 0 skips them), then
#                               bench/reductions/ab.sh (any .kf files) of KFUSE_A against
#                               build/bin/kfuse (and KFUSE_MORE, comma-separated) on the models' decode cases (bench/models,
#                               DECODE_T default 1; DECODE_LAYERS default the blocks, gate_proj
#                               with its activation, GPT-2's c_fc, c_proj and lm_head) until
#                               AB_TIMEOUT (default 300 s), in DECODE_ORDER (the most changed first);
#                               ab-decode.txt in $OUT
#   bench/device_run.sh models  issue 17's table: bench/models/run.py (kfuse, cuBLAS, eager,
#                               torch.compile; MODELS_ARGS, default the blocks at T = 1, 16,
#                               128 with max-autotune as well; MODELS_BUDGET seconds, default
#                               480) with every peer in a CUDA graph; models.md, models.json in $OUT
#   bench/device_run.sh python  issue 21: the Python package's tests on torch CUDA tensors and
#                               transformers' LlamaMLP, and bench/python/run.py (kfuse vs
#                               eager vs Inductor, host cost per call); python.md in $OUT
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-./device-logs}
mkdir -p "$out"
bin=build/bin
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv >"$out/gpu.txt" 2>&1
case "${1:-}" in
  tests)
    tmp=$(mktemp -d)
    # The device call's limit is 600 s: stop the suite in time to bring its logs back, and
    # name the cases it cut (a log whose case has no line in the summary).
    timeout -k 10 "${SUITE_TIMEOUT:-540}" tools/gpu_suite.sh "$bin" "$tmp" >"$out/gpu-suite.txt" 2>&1
    rc=$?
    for f in "$tmp"/[0-9]*.log; do
      [ -f "$f" ] || continue
      name=$(head -1 "$f" | sed 's/^== //')
      grep -qF "  $name" "$tmp/summary.txt" 2>/dev/null || echo "CUT (timeout) $name" >>"$out/gpu-suite.txt"
    done
    tar -czf "$out/gpu-suite.tar.gz" -C "$tmp" .
    cat "$out/gpu-suite.txt"
    exit $rc ;;
  bench)
    rc=0
    {
      for g in examples/graphs/matmul_bias_relu.kf bench/graphs/mm_bias_relu_8192.kf \
               bench/graphs/decode_m1_8192.kf bench/graphs/decode_m16_8192.kf; do
        check=""
        case $g in *decode*) check=--check ;; esac # the interpreter takes minutes at 4096^3
        echo "=== $g"
        $bin/kfuse report "$g" --device h200 || rc=1
        $bin/kfuse run "$g" --bench --reps 50 $check || rc=1
      done
    } >"$out/kfuse-run.txt" 2>&1
    $bin/GemmBench >"$out/gemmbench.txt" 2>&1 || rc=1
    if [ -f .peers/peers.py ]; then
      PYTHONUNBUFFERED=1 SKIP_SEED6=1 python3 .peers/peers.py >"$out/peers.txt" 2>&1 || rc=1
    fi
    cat "$out"/kfuse-run.txt "$out"/gemmbench.txt "$out"/peers.txt 2>/dev/null | grep -v '^$'
    exit $rc ;;
  compile)
    rc=0
    {
      echo "cores: $(nproc)"
      for g in examples/graphs/*.kf bench/graphs/*.kf; do
        for jobs in 0 1; do
          cache=$(mktemp -d)
          flag=""; [ $jobs -gt 0 ] && flag="--jobs $jobs"
          for run in cold warm; do
            t0=$(date +%s.%N)
            # NVRTC 12.9+ keeps its own cache in the driver's compute cache: a cold compile turns it off.
            nocache=""; [ $run = cold ] && nocache=1
            CUDA_CACHE_DISABLE=$nocache KFUSE_CACHE_DIR=$cache $bin/kfuse compile "$g" $flag >"$cache.log" 2>&1 || rc=1
            t1=$(date +%s.%N)
            echo "$run jobs=${jobs:-all} $(basename "$g"): process $(awk "BEGIN{printf \"%.0f\", ($t1 - $t0) * 1000}") ms; $(grep -h '^graph' "$cache.log" | tr '\n' ' ')"
          done
          rm -rf "$cache" "$cache.log"
        done
      done
    } >"$out/compile-times.txt" 2>&1
    cat "$out/compile-times.txt"
    exit $rc ;;
  landing)
    rc=0
    SUITE_TIMEOUT=${SUITE_TIMEOUT:-360} "$0" tests >/dev/null 2>&1 || rc=1
    "$0" compile >/dev/null 2>&1 || rc=1
    {
      for g in examples/graphs/mlp.kf bench/graphs/llama3_8b_ffn_t16.kf bench/graphs/llama3_8b_ffn_t2048.kf; do
        echo "=== $g"
        $bin/kfuse run "$g" --bench --reps 50 || rc=1
      done
    } >"$out/run-bench.txt" 2>&1
    tail -n 40 "$out/gpu-suite.txt"
    grep -h "^cold\|^warm" "$out/compile-times.txt" | grep -v "jobs=1" | cut -c1-220
    grep -h "^===\|program\|device copy\|fused\|measured" "$out/run-bench.txt"
    exit $rc ;;
  reductions)
    # SIGTERM before the call's 600 s: run.py then writes the tables of what it measured.
    PYTHONUNBUFFERED=1 timeout -k 15 "${RED_TIMEOUT:-560}" python3 bench/reductions/run.py --kfuse "$bin/kfuse" \
      --budget-s "${RED_BUDGET:-400}" --json "$out/reductions.json" --md "$out/reductions.md" \
      >"$out/reductions.log" 2>&1
    rc=$?
    if [ -f "$out/reductions.md" ]; then cat "$out/reductions.md"; else tail -n 40 "$out/reductions.log"; fi
    exit $rc ;;
  epilogue)
    python3 bench/epilogue/run.py --kfuse "$bin/kfuse" --md "$out/epilogue.md" --json "$out/epilogue.json" \
      >"$out/epilogue.log" 2>&1
    rc=$?
    cat "$out/epilogue.log"
    exit $rc ;;
  reduce-ab)
    rc=0
    tmp=$(mktemp -d)
    SPEC='[reduce]' timeout -k 10 "${REDUCE_SUITE_TIMEOUT:-200}" tools/gpu_suite.sh "$bin" "$tmp" \
      >"$out/reduce-suite.txt" 2>&1 || rc=1
    tar -czf "$out/reduce-suite.tar.gz" -C "$tmp" .
    tail -n 3 "$out/reduce-suite.txt"; grep -h '^FAIL' "$out/reduce-suite.txt"
    [ -x "${KFUSE_A:-}" ] || { echo "reduce-ab: KFUSE_A is not an executable" >&2; exit 2; }
    deadline=$(( $(date +%s) + ${AB_TIMEOUT:-330} ))
    for shape in ${AB_SHAPES:-4096x131072 65536x1024 16384x8192 4096x4096}; do
      left=$(( deadline - $(date +%s) ))
      [ $left -gt 5 ] || { echo "reduce-ab: no time left for $shape"; break; }
      kf=$(mktemp -d)
      python3 bench/reductions/cases.py --shapes "$shape" --out "$kf" >/dev/null || rc=1
      timeout -k 5 $left bench/reductions/ab.sh "$KFUSE_A" "$bin/kfuse${KFUSE_MORE:+,$KFUSE_MORE}" "$kf" >"$out/ab-$shape.txt" 2>&1 || rc=1
      cat "$out/ab-$shape.txt"
    done
    exit $rc ;;
  decode-ab)
    rc=0
    tmp=$(mktemp -d)
    if [ "${DECODE_SUITE_TIMEOUT:-200}" -gt 0 ]; then # 0: the A/B only
      SPEC='[gemm]' timeout -k 10 "${DECODE_SUITE_TIMEOUT:-200}" tools/gpu_suite.sh "$bin" "$tmp" \
        >"$out/decode-suite.txt" 2>&1 || rc=1
      tar -czf "$out/decode-suite.tar.gz" -C "$tmp" .
      tail -n 3 "$out/decode-suite.txt"; grep -h '^FAIL' "$out/decode-suite.txt"
    fi
    [ -x "${KFUSE_A:-}" ] || { echo "decode-ab: KFUSE_A is not an executable" >&2; exit 2; }
    kf=$(mktemp -d)
    # Each model's block, its gate_proj (or c_fc) with the activation, GPT-2's c_proj with its
    # bias and lm_head (the larger vocabularies' weights take long to fill on the host).
    python3 bench/models/models.py --T "${DECODE_T:-1}" --layers "${DECODE_LAYERS:-mlp,gate_proj,mlp.c_fc,mlp.c_proj}" \
      --out "$kf" >/dev/null || rc=1
    python3 bench/models/models.py --T "${DECODE_T:-1}" --models gpt2_xl --layers lm_head --out "$kf" >/dev/null || rc=1
    if [ -z "${DECODE_LAYERS:-}" ]; then
      rm -f "$kf"/*gate_proj__bare* "$kf"/*c_fc__bare* "$kf"/*c_fc__bias* "$kf"/*c_proj__bare*
      # the cases most changed first, in case the time runs out: 01_gpt2_xl__mlp_c_fc__act__t1.kf ...
      i=0
      for c in ${DECODE_ORDER:-llama3_8b__gate_proj__act qwen2_7b__gate_proj__act llama3_8b__mlp__swiglu \
               gemma_7b__mlp__geglu llama3_70b_tp8__gate_proj__act gpt2_xl__mlp_c_proj__bias \
               qwen2_7b__mlp__swiglu gpt2_xl__mlp__gelu_new llama3_70b_tp8__mlp__swiglu \
               gemma_7b__gate_proj__act gpt2_xl__mlp_c_fc__act gpt2_xl__lm_head__bare}; do
        i=$((i + 1))
        for f in "$kf/${c}__t"*.kf; do [ -f "$f" ] && mv "$f" "$kf/$(printf %02d $i)_$(basename "$f")"; done
      done
    fi
    REPS=${REPS:-20} timeout -k 5 "${AB_TIMEOUT:-300}" bench/reductions/ab.sh "$KFUSE_A" "$bin/kfuse${KFUSE_MORE:+,$KFUSE_MORE}" "$kf" \
      >"$out/ab-decode.txt" 2>&1 || rc=1
    cat "$out/ab-decode.txt"
    exit $rc ;;
  models)
    # SIGTERM before the call's 600 s: run.py then writes the tables of what it measured.
    # shellcheck disable=SC2086 # MODELS_ARGS is a list of arguments
    PYTHONUNBUFFERED=1 timeout -k 15 "${MODELS_TIMEOUT:-560}" python3 bench/models/run.py --kfuse "$bin/kfuse" \
      ${MODELS_ARGS:---only-blocks --T 1,16,128 --autotune} --budget-s "${MODELS_BUDGET:-480}" \
      --json "$out/models.json" --md "$out/models.md" >"$out/models.log" 2>&1
    rc=$?
    if [ -f "$out/models.md" ]; then cat "$out/models.md"; else tail -n 40 "$out/models.log"; fi
    exit $rc ;;
  python)
    # issue 21: the Python package and torch.compile(backend="kfuse") (python/tests/device_check.sh)
    OUT=$out bash python/tests/device_check.sh
    exit $? ;;
  *) echo "usage: bench/device_run.sh tests|compile|bench|landing|reductions|reduce-ab|decode-ab|epilogue|models|python" >&2; exit 2 ;;
esac
