#pragma once
/// The GEMM GPU tests' harness: random device-layout inputs, a run of a planned graph on the
/// GPU (plain launches or a CUDA graph, any tuning), and checks against the interpreter or
/// against float64 values of sampled elements (for graphs too large to interpret).
#include "GpuHarness.h"

#include "codegen/GemmTuning.h"
#include "codegen/KernelSpec.h"
#include "ir/Graph.h"
#include "ir/Tensor.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace kfuse::gputest {

using RunResultSpecs = std::vector<codegen::KernelSpec>;

/// A tensor's bytes as the device holds them.
struct Raw {
  TensorType type;
  std::vector<unsigned char> bytes;
  double at(int64_t i) const {
    if (type.dtype == DType::F32) {
      float f;
      std::memcpy(&f, &bytes[i * 4], 4);
      return f;
    }
    uint16_t h;
    std::memcpy(&h, &bytes[i * 2], 2);
    return type.dtype == DType::F16 ? halfBitsToFloat(h) : bf16BitsToFloat(h);
  }
};

/// Random values in [-2, 2] of t's dtype (fast enough for the 1e9-element example graph).
Raw randomRaw(const TensorType &t, uint64_t seed);
DeviceBuffer uploadRaw(const Raw &r);
Raw downloadRaw(const TensorType &t, const DeviceBuffer &b);
/// The largest K of g's matmuls (1 without one): the tolerance grows with it.
int64_t maxK(const Graph &g);
/// "" when `got` is within dtype t's tolerance of `ref` (K: the sum's length).
std::string checkClose(DType t, double got, double ref, int64_t K, int64_t index);
/// Ids of the values the kernels store (and round).
std::vector<unsigned> storedIds(const RunResultSpecs &specs);
/// The dtype whose tolerance an output gets (its own, or a coarser one stored on the way).
DType checkDType(DType out, const RunResultSpecs &specs);
/// float64 value of `n` at multi-index `idx`, by the interpreter's rules.
double pointEval(const Node *n, const std::vector<int64_t> &idx,
                 const std::vector<const Raw *> &inputOf, const std::vector<unsigned> &stored);

struct RunResult {
  std::vector<Raw> inputs, outputs;
  std::vector<codegen::KernelSpec> specs;
};

/// Whether `d` runs the sm_90a wgmma kernels (compute capability 9.0 exactly); warns if not.
bool wgmmaDevice(const runtime::Driver &d);
/// Runs `g` (planned as given) with random inputs and poisoned outputs; `graphReplay` runs
/// it as a CUDA graph; `archSpecific` false keeps to portable kernels; `tuning` picks GEMM
/// configurations as an autotuned choice would; `launches`: the same executable that many
/// times (outputs poisoned again before each), what a kernel leaves for its next launch (a
/// stream-K counter) checked by the last one's outputs.
RunResult runOnGpu(const Graph &g, uint64_t seed, bool graphReplay = false,
                   bool archSpecific = true, const codegen::GemmTuning *tuning = nullptr,
                   bool allowTf32 = false, unsigned launches = 1);
/// The interpreter's outputs of `g` on the inputs of run `r`, rounding what r's kernels store.
std::vector<Tensor> referenceOf(const Graph &g, const RunResult &r);
/// Every element of the first `outputs` outputs against the interpreter.
std::string checkWithInterpreter(const Graph &g, const RunResult &r, size_t outputs = SIZE_MAX);
/// Every element against the interpreter within the forward error bound (ir/ErrorBound.h's
/// checkOutputs, as `kfuse run --check`): for epilogues that multiply two sums (a sibling
/// GEMM's silu(g) * u), whose f32 accumulation error scales with the other factor.
std::string checkWithErrorBound(const Graph &g, const RunResult &r);
/// `samples` elements per output (the first, the last and random ones) by pointEval.
std::string checkSampled(const Graph &g, const RunResult &r, int samples, uint64_t seed);

enum class Epi { None, Bias, BiasRelu, ResidualGelu, ScaleCast, RowBiasSilu };

/// matmul (+ epilogue) over the given shapes, fused into one kernel by the fusion pass.
std::unique_ptr<Graph> gemmGraph(DType t, Shape sa, Shape sb, MatMulAttrs attrs, Epi epi);
const char *epiName(Epi e);
/// The example graphs' folder (KFUSE_EXAMPLES overrides).
std::string examplesDir();

} // namespace kfuse::gputest
