// GEMM benchmark on the GPU, one run: bf16 matmul + bias + relu at 4096^3 and 8192^3 with
// kfuse's generated kernel (epilogue fused) against cuBLAS's bare GEMM, cuBLAS followed by
// separate bias and relu kernels, and cuBLASLt with its fused RELU_BIAS epilogue; and the
// decode shapes [1 or 16, 8192] x [8192, 8192] + bias + relu against cuBLAS and a device
// copy of the weight bytes. Random inputs (never zeros), CUDA events, warm-up, median of
// many, each timed per call (the GPU idle when the host submits it) and queued behind a busy
// kernel (the GPU's time only; runtime/Timing). Prints a Markdown table.
#include "codegen/GemmTuning.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "passes/Fusion.h"
#include "runtime/Driver.h"
#include "runtime/Executable.h"
#include "runtime/Timing.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cublasLt.h>
#include <cublas_v2.h>
#include <functional>
#include <string>
#include <vector>

using namespace kfuse;
using runtime::Driver;

static Driver *D;

static void cublasCheck(cublasStatus_t s, const char *what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    fail("{} failed: cuBLAS status {}", what, static_cast<int>(s));
}

/// The median of one piece of work, timed two ways (runtime/Timing): per call, the GPU idle
/// when the host submits it (the host's launch time counted, as the peers' numbers in
/// GPU.md are measured), and queued, behind a 200 us busy kernel (the GPU's time only).
struct Timed {
  double perCall = 0, queued = 0; // ms
};
/// With reps == 1 (`--once`, for a profiler) the work runs once, per call, no warm-up.
static Timed timed(const std::function<void()> &work, int reps) {
  runtime::TimingOptions o;
  o.warmup = reps > 1 ? 5 : 0;
  o.reps = reps;
  Timed t;
  t.perCall = runtime::medianMs(nullptr, work, o);
  if (reps == 1)
    return {t.perCall, t.perCall};
  o.queueBehindUs = 200;
  t.queued = runtime::medianMs(nullptr, work, o);
  return t;
}

/// n random values in [-1, 1) (xorshift from `seed`) as `store` writes them, in device memory.
template <class T, class Store>
static CUdeviceptr randomDevice(size_t n, uint64_t seed, Store store) {
  std::vector<T> h(n);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 7;
  for (T &v : h) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    v = store(static_cast<float>((s >> 40) * (2.0 / double(1ull << 24)) - 1.0));
  }
  CUdeviceptr p;
  D->check(D->cuMemAlloc_v2(&p, n * sizeof(T)), "cuMemAlloc");
  D->check(D->cuMemcpyHtoD_v2(p, h.data(), n * sizeof(T)), "cuMemcpyHtoD");
  return p;
}
static CUdeviceptr randomBf16(size_t n, uint64_t seed) {
  return randomDevice<uint16_t>(n, seed, [](float f) { return floatToBF16Bits(f); });
}
static CUdeviceptr randomF32(size_t n, uint64_t seed) {
  return randomDevice<float>(n, seed, [](float f) { return f; });
}

static CUdeviceptr alloc(size_t bytes) {
  CUdeviceptr p;
  D->check(D->cuMemAlloc_v2(&p, bytes), "cuMemAlloc");
  return p;
}

/// relu(x[M,K] @ w[K,N] + b[N]) in `t` (bf16 unless said; w as [N,K] when transB), fused by
/// the fusion pass.
static std::unique_ptr<Graph> mbr(int64_t M, int64_t N, int64_t K, bool transB, DType t = bf16) {
  auto g = std::make_unique<Graph>("mbr");
  Value x = g->input("x", t, {M, K});
  Value w = g->input("w", t, transB ? Shape{N, K} : Shape{K, N});
  Value b = g->input("b", t, {N});
  g->output(relu(matmul(x, w, {false, transB}) + b));
  fuseGraph(*g);
  return g;
}

static std::vector<uint16_t> download(CUdeviceptr p, int64_t n) {
  std::vector<uint16_t> h(n);
  D->check(D->cuMemcpyDtoH_v2(h.data(), p, n * 2), "cuMemcpyDtoH");
  return h;
}

/// kfuse's bf16 result against another implementation's: the largest difference relative to
/// the reference's RMS (both round f32 sums to bf16, so ~2^-8 is agreement). Prints one
/// line; a difference above 5% of the RMS is a wrong result, and the benchmark fails.
static void compareOutputs(const char *other, const std::vector<uint16_t> &ref,
                           const std::vector<uint16_t> &ours) {
  double maxDiff = 0, sumSq = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double r = bf16BitsToFloat(ref[i]), o = bf16BitsToFloat(ours[i]);
    sumSq += r * r;
    maxDiff = std::max(maxDiff, std::isnan(o) ? HUGE_VAL : std::fabs(o - r));
  }
  double rms = std::sqrt(sumSq / double(std::max<size_t>(1, ref.size())));
  std::printf("|  | check: kfuse vs %s over %zu elements: max |diff| %.4g = %.2g of the RMS %.4g "
              "| | | | | | |\n",
              other, ref.size(), maxDiff, maxDiff / std::max(rms, 1e-30), rms);
  if (!(maxDiff <= 0.05 * rms))
    fail("kfuse's result differs from {}'s by {} (RMS {})", other, maxDiff, rms);
}

/// kfuse's f32 result against another's, as compareOutputs; `limit` of the RMS (TF32 on
/// either side: a 10-bit mantissa, so ~1e-3 is agreement).
static void compareF32(const char *other, CUdeviceptr ref, CUdeviceptr ours, int64_t n,
                       double limit) {
  std::vector<float> r(n), o(n);
  D->check(D->cuMemcpyDtoH_v2(r.data(), ref, n * 4), "cuMemcpyDtoH");
  D->check(D->cuMemcpyDtoH_v2(o.data(), ours, n * 4), "cuMemcpyDtoH");
  double maxDiff = 0, sumSq = 0;
  for (int64_t i = 0; i < n; ++i) {
    sumSq += double(r[i]) * r[i];
    maxDiff = std::max(maxDiff, std::isnan(o[i]) ? HUGE_VAL : std::fabs(double(o[i]) - r[i]));
  }
  double rms = std::sqrt(sumSq / double(std::max<int64_t>(1, n)));
  std::printf("|  | check: kfuse vs %s over %lld elements: max |diff| %.4g = %.2g of the RMS %.4g "
              "| | | | | | |\n",
              other, (long long)n, maxDiff, maxDiff / std::max(rms, 1e-30), rms);
  if (!(maxDiff <= limit * rms))
    fail("kfuse's result differs from {}'s by {} (RMS {})", other, maxDiff, rms);
}

struct Lt {
  cublasLtHandle_t h = nullptr;
  void *ws = nullptr;
  size_t wsBytes = 64 << 20;
};

/// cuBLASLt bf16 GEMM with its RELU_BIAS epilogue, row-major C[M,N] = relu(A[M,K] B[K,N] + b)
/// computed as the column-major C^T = B^T A^T (bias along C^T's rows).
static std::function<void()> ltReluBias(Lt &lt, CUdeviceptr A, CUdeviceptr B, CUdeviceptr bias,
                                        CUdeviceptr C, int64_t M, int64_t N, int64_t K) {
  cublasLtMatmulDesc_t op;
  cublasCheck(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F),
              "cublasLtMatmulDescCreate");
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_RELU_BIAS;
  cublasCheck(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)),
              "epilogue");
  void *bp = reinterpret_cast<void *>(bias);
  cublasCheck(
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof(bp)),
      "bias");
  cudaDataType_t bt = CUDA_R_16BF;
  cublasCheck(
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof(bt)),
      "bias type");
  cublasLtMatrixLayout_t la, lb, lc;
  cublasCheck(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, N, K, N),
              "layout B^T"); // first operand: B^T
  cublasCheck(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, K, M, K), "layout A^T");
  cublasCheck(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, N, M, N), "layout C^T");
  cublasLtMatmulPreference_t pref;
  cublasCheck(cublasLtMatmulPreferenceCreate(&pref), "pref");
  cublasCheck(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                   &lt.wsBytes, sizeof(lt.wsBytes)),
              "pref ws");
  cublasLtMatmulHeuristicResult_t heur{};
  int found = 0;
  cublasCheck(cublasLtMatmulAlgoGetHeuristic(lt.h, op, la, lb, lc, lc, pref, 1, &heur, &found),
              "heuristic");
  if (!found)
    fail("cuBLASLt found no RELU_BIAS algorithm");
  return [=, &lt] {
    float alpha = 1.f, beta = 0.f;
    cublasCheck(cublasLtMatmul(lt.h, op, &alpha, reinterpret_cast<void *>(B), la,
                               reinterpret_cast<void *>(A), lb, &beta, reinterpret_cast<void *>(C),
                               lc, reinterpret_cast<void *>(C), lc, &heur.algo, lt.ws, lt.wsBytes,
                               nullptr),
                "cublasLtMatmul");
  };
}

static void gemmEx(cublasHandle_t h, CUdeviceptr A, CUdeviceptr B, CUdeviceptr C, int64_t M,
                   int64_t N, int64_t K, bool transB) {
  float alpha = 1.f, beta = 0.f;
  // Row-major C = A B^(T) as column-major C^T = B^(T)^T A^T.
  cublasCheck(cublasGemmEx(h, transB ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, int(N), int(M),
                           int(K), &alpha, reinterpret_cast<void *>(B), CUDA_R_16BF,
                           transB ? int(K) : int(N), reinterpret_cast<void *>(A), CUDA_R_16BF,
                           int(K), &beta, reinterpret_cast<void *>(C), CUDA_R_16BF, int(N),
                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
              "cublasGemmEx");
}

/// GemmBench [--once] [--only TEXT] [--config TEXT]...: --once runs every implementation once
/// (for ncu), --only keeps the cases whose name contains TEXT, --config also times each kfuse
/// configuration (autotune candidate) whose description contains TEXT, beside the default.
int main(int argc, char **argv) {
  int reps = 50;
  std::string only;
  std::vector<std::string> configs;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--once")) {
      reps = 1;
    } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) {
      only = argv[++i];
    } else if (!std::strcmp(argv[i], "--config") && i + 1 < argc) {
      configs.push_back(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: GemmBench [--once] [--only TEXT] [--config TEXT]...\n");
      return 1;
    }
  }
  D = Driver::get();
  if (!D) {
    std::fprintf(stderr, "GemmBench: %s\n", Driver::unavailableReason().c_str());
    return 77;
  }
  try {
    std::printf("GPU: %s (%s, %d SMs)\n\n", D->deviceName.c_str(), D->arch().c_str(), D->smCount);
    cublasHandle_t h;
    cublasCheck(cublasCreate(&h), "cublasCreate");
    Lt lt;
    cublasCheck(cublasLtCreate(&lt.h), "cublasLtCreate");
    lt.ws = reinterpret_cast<void *>(alloc(lt.wsBytes));

    // Copy bandwidth: 1 GiB device to device, bytes read + written.
    size_t cb = size_t(1) << 30;
    CUdeviceptr c0 = alloc(cb), c1 = alloc(cb);
    D->check(D->cuMemsetD8_v2(c0, 0x3C, cb), "memset");
    Timed copy =
        timed([&] { D->check(D->cuMemcpyDtoDAsync_v2(c1, c0, cb, nullptr), "copy"); }, 20);
    const double copyGBs = 2.0 * cb / (copy.perCall * 1e-3) / 1e9,
                 copyQueuedGBs = 2.0 * cb / (copy.queued * 1e-3) / 1e9;
    std::printf("device copy 1 GiB: %.3f ms, %.0f GB/s (read + write) per call; %.3f ms, %.0f "
                "GB/s queued\n\n",
                copy.perCall, copyGBs, copy.queued, copyQueuedGBs);
    D->cuMemFree_v2(c0);
    D->cuMemFree_v2(c1);

    std::printf("Per call: the GPU idle when the host submits the work; queued: behind a busy "
                "kernel, the GPU's time only. %% of copy: the weight bytes' rate over the 1 GiB "
                "copy's, timed the same way.\n\n");
    std::printf("| case | kernel | per call us | TFLOP/s | %% of copy | queued us | TFLOP/s | "
                "%% of copy |\n|---|---|---|---|---|---|---|---|\n");
    auto rowOut = [&](const char *cs, const std::string &kern, Timed t, double flops,
                      double wbytes) {
      auto gbs = [&](double ms) { return wbytes / (ms * 1e-3) / 1e9; };
      std::printf("| %s | %s | %.1f | %.1f | %.1f%% | %.1f | %.1f | %.1f%% |\n", cs, kern.c_str(),
                  t.perCall * 1e3, flops / (t.perCall * 1e-3) / 1e12,
                  100.0 * gbs(t.perCall) / copyGBs, t.queued * 1e3,
                  flops / (t.queued * 1e-3) / 1e12, 100.0 * gbs(t.queued) / copyQueuedGBs);
      std::fflush(stdout);
    };
    struct Shape3 {
      const char *name;
      int64_t M, N, K;
      bool transB;
    };
    std::vector<Shape3> shapes = {
        {"4096^3 +bias+relu", 4096, 4096, 4096, false},
        {"4096^3, W as [N,K] (trans_b)", 4096, 4096, 4096, true},
        {"8192^3 +bias+relu", 8192, 8192, 8192, false},
        {"decode M=1 [1,8192]x[8192,8192] +bias+relu", 1, 8192, 8192, false},
        {"decode M=1, W as [N,K] (trans_b)", 1, 8192, 8192, true},
        {"decode M=16 [16,8192]x[8192,8192] +bias+relu", 16, 8192, 8192, false},
        {"decode M=16, W as [N,K] (trans_b)", 16, 8192, 8192, true}};
    for (const Shape3 &s : shapes) {
      if (std::string(s.name).find(only) == std::string::npos)
        continue;
      double flops = 2.0 * s.M * s.N * s.K, wbytes = 2.0 * s.N * s.K;
      CUdeviceptr A = randomBf16(s.M * s.K, 1), B = randomBf16(s.N * s.K, 2),
                  bias = randomBf16(s.N, 3);
      CUdeviceptr C = alloc(s.M * s.N * 2), T = alloc(s.M * s.N * 2);
      auto g = mbr(s.M, s.N, s.K, s.transB);
      runtime::Executable exe(*D, runtime::compileAsGiven(*D, *g));
      exe.launch({A, B, bias}, {C}, nullptr);
      D->check(D->cuCtxSynchronize(), "first run");
      Timed ours = timed([&] { exe.launchKernel(0, nullptr); }, reps);
      rowOut(s.name, "kfuse " + exe.specs()[0].gemm()->describe(), ours, flops, wbytes);
      std::vector<uint16_t> mine = download(C, s.M * s.N);
      // Other configurations of the same kernel, chosen as a tuning would choose them.
      const Target target = runtime::deviceTarget(*D);
      const codegen::GemmSpec &chosen = *exe.specs()[0].gemm();
      for (const std::string &want : configs)
        for (const codegen::GemmSpec &c : codegen::gemmCandidates(chosen, target)) {
          if (c.describe().find(want) == std::string::npos || c.describe() == chosen.describe())
            continue;
          codegen::GemmTuning tuning;
          tuning.byProblem[codegen::gemmProblemKey(chosen, target)] = {c.describe(), "--config"};
          compiler::CompileOptions tuned;
          tuned.tuning = &tuning;
          runtime::Executable other(*D, runtime::compileAsGiven(*D, *g, tuned));
          other.launch({A, B, bias}, {C}, nullptr);
          Timed t = timed([&] { other.launchKernel(0, nullptr); }, reps);
          rowOut(s.name, "kfuse " + other.specs()[0].gemm()->describe(), t, flops, wbytes);
          compareOutputs("this kfuse configuration", download(C, s.M * s.N), mine);
        }
      if (s.M > 16) { // the portable mma.sync kernel on the same problem, for comparison
        compiler::CompileOptions portable;
        portable.target.archSpecific = false;
        runtime::Executable tc(*D, runtime::compileAsGiven(*D, *g, portable));
        tc.launch({A, B, bias}, {C}, nullptr);
        Timed tcMs = timed([&] { tc.launchKernel(0, nullptr); }, reps);
        rowOut(s.name, "kfuse portable sm_90: " + tc.specs()[0].gemm()->describe(), tcMs, flops,
               wbytes);
        compareOutputs("portable kfuse", download(C, s.M * s.N), mine);
      }
      Timed bare = timed([&] { gemmEx(h, A, B, T, s.M, s.N, s.K, s.transB); }, reps);
      rowOut(s.name, "cuBLAS bare GEMM (no epilogue)", bare, flops, wbytes);
      // cuBLAS, then separate add and relu kernels (kfuse elementwise, unfused).
      Graph ew("bias_relu");
      Value hv = ew.input("h", bf16, {s.M, s.N});
      Value bv = ew.input("b", bf16, {s.N});
      ew.output(relu(hv + bv));
      runtime::Executable sep(*D, runtime::compileAsGiven(*D, ew));
      Timed split = timed(
          [&] {
            gemmEx(h, A, B, T, s.M, s.N, s.K, s.transB);
            sep.launch({T, bias}, {C}, nullptr);
          },
          reps);
      rowOut(s.name, "cuBLAS + separate add, relu kernels", split, flops, wbytes);
      compareOutputs("cuBLAS + add + relu", download(C, s.M * s.N), mine);
      if (!s.transB) {
        auto lf = ltReluBias(lt, A, B, bias, T, s.M, s.N, s.K);
        Timed ltMs = timed(lf, reps);
        rowOut(s.name, "cuBLASLt fused RELU_BIAS", ltMs, flops, wbytes);
      }
      if (s.M <= 16) {
        CUdeviceptr W2 = alloc(size_t(wbytes));
        Timed cp = timed(
            [&] { D->check(D->cuMemcpyDtoDAsync_v2(W2, B, size_t(wbytes), nullptr), "copy"); },
            reps);
        std::printf("| %s | device copy of the weight bytes (%.0f / %.0f GB/s read+write) | %.1f "
                    "| | | %.1f | | |\n",
                    s.name, 2 * wbytes / (cp.perCall * 1e-3) / 1e9,
                    2 * wbytes / (cp.queued * 1e-3) / 1e9, cp.perCall * 1e3, cp.queued * 1e3);
        D->cuMemFree_v2(W2);
      }
      for (CUdeviceptr p : {A, B, bias, C, T})
        D->cuMemFree_v2(p);
    }
    // f32: exact by default (FFMA tiles) and, where the user allows TF32 (--tf32), TF32
    // tensor cores (wgmma for W as [N, K] on sm_90a, else mma.sync); cuBLAS with
    // CUBLAS_COMPUTE_32F and _32F_FAST_TF32.
    for (bool transB : {false, true}) {
      const char *name = transB ? "f32 4096^3, W as [N,K] (trans_b)" : "f32 4096^3 +bias+relu";
      if (std::string(name).find(only) == std::string::npos)
        continue;
      const int64_t M = 4096, N = 4096, K = 4096;
      double flops = 2.0 * M * N * K, wbytes = 4.0 * N * K;
      CUdeviceptr A = randomF32(M * K, 1), B = randomF32(N * K, 2), bias = randomF32(N, 3);
      CUdeviceptr C = alloc(M * N * 4), T = alloc(M * N * 4), R = alloc(M * N * 4);
      auto g = mbr(M, N, K, transB, f32);
      runtime::Executable exact(*D, runtime::compileAsGiven(*D, *g));
      exact.launch({A, B, bias}, {R}, nullptr);
      Timed te = timed([&] { exact.launchKernel(0, nullptr); }, reps);
      rowOut(name, "kfuse " + exact.specs()[0].gemm()->describe(), te, flops, wbytes);
      compiler::CompileOptions tf;
      tf.allowTf32 = true;
      runtime::Executable tf32(*D, runtime::compileAsGiven(*D, *g, tf));
      tf32.launch({A, B, bias}, {C}, nullptr);
      Timed tt = timed([&] { tf32.launchKernel(0, nullptr); }, reps);
      rowOut(name, "kfuse --tf32 " + tf32.specs()[0].gemm()->describe(), tt, flops, wbytes);
      compareF32("exact kfuse", R, C, M * N, 1e-2);
      Graph ew("bias_relu");
      Value hv = ew.input("h", f32, {M, N});
      Value bv = ew.input("b", f32, {N});
      ew.output(relu(hv + bv));
      runtime::Executable sep(*D, runtime::compileAsGiven(*D, ew));
      for (bool fast : {false, true}) {
        auto gemm = [&] {
          float alpha = 1.f, beta = 0.f;
          cublasCheck(cublasGemmEx(h, transB ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, int(N),
                                   int(M), int(K), &alpha, reinterpret_cast<void *>(B),
                                   CUDA_R_32F, transB ? int(K) : int(N),
                                   reinterpret_cast<void *>(A), CUDA_R_32F, int(K), &beta,
                                   reinterpret_cast<void *>(T), CUDA_R_32F, int(N),
                                   fast ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT),
                      "cublasGemmEx f32");
        };
        Timed bare = timed(gemm, reps);
        rowOut(name, fast ? "cuBLAS TF32 bare GEMM" : "cuBLAS f32 (no TF32) bare GEMM", bare, flops,
               wbytes);
        Timed split = timed(
            [&] {
              gemm();
              sep.launch({T, bias}, {C}, nullptr);
            },
            reps);
        rowOut(name, fast ? "cuBLAS TF32 + separate add, relu kernels"
                          : "cuBLAS f32 + separate add, relu kernels",
               split, flops, wbytes);
        compareF32(fast ? "cuBLAS TF32 + add + relu" : "cuBLAS f32 + add + relu", C, R, M * N,
                   fast ? 1e-2 : 1e-4);
      }
      for (CUdeviceptr p : {A, B, bias, C, T, R})
        D->cuMemFree_v2(p);
    }
    cublasLtDestroy(lt.h);
    cublasDestroy(h);
  } catch (const Error &e) {
    std::fprintf(stderr, "GemmBench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
