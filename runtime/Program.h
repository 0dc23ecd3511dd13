#pragma once
/// Program: the C++ API that `kfuse run` is built on. It takes a Graph through the whole
/// flow: plans it (the -O2 pipeline, or every op its own kernel), generates and compiles
/// the kernels (through the kernel cache), loads them, and then runs them on host tensors,
/// checks them against the reference interpreter and times them.
///
///   kfuse::runtime::Program p(graph);            // -O2, compile, load
///   std::vector<Tensor> out = p.run(inputs);     // one CUDA graph replay
///   std::string bad = p.check(inputs, out);      // "" when every output matches
///   ProgramTiming t = p.bench(inputs, parseTarget("h200"));
#include "ir/Graph.h"
#include "ir/Tensor.h"
#include "runtime/Autotune.h"
#include "runtime/Benchmark.h"
#include "runtime/Executable.h"
#include "compiler/Compile.h"
#include "compiler/KernelCache.h"

#include <memory>
#include <string>
#include <vector>

namespace kfuse::runtime {

struct ProgramOptions {
  bool fuse = true;      ///< false: every op its own kernel (the unfused plan)
  bool autotune = false; ///< measure the GEMM kernels' configurations first (Autotune.h)
  /// Everything else the compiler driver takes: policy (allowTf32: check() then holds TF32
  /// matmuls to f16's tolerance), dumps, compile threads. Its planning follows `fuse` and
  /// its target is the device's.
  compiler::CompileOptions compile;
};

class Program {
public:
  /// Plans a copy of `g` (which is left as it is), compiles and loads it on the device.
  /// Throws kfuse::Error when there is no GPU, the graph cannot be generated or NVRTC fails.
  explicit Program(const Graph &g, const ProgramOptions &o = {});
  ~Program();

  /// The graph as planned (kernel regions as the kernels run).
  const Graph &plan() const { return *module_.plan; }
  /// Everything compile() produced: kernels, sources, cubins, estimates, timings.
  const compiler::CompiledModule &module() const { return module_; }
  Executable &executable() { return *exe_; }
  size_t numKernels() const { return exe_->specs().size(); }
  /// Milliseconds spent generating, compiling (or finding in the cache) and loading.
  double compileLoadMs() const { return compileLoadMs_; }
  /// Where the cubin came from: the in-memory cache, the disk cache or NVRTC.
  const compiler::CacheStats &cacheUse() const { return cacheUse_; }
  /// What the autotuner measured or found in its cache (empty without `autotune`).
  const std::vector<AutotuneResult> &autotuned() const { return autotuned_; }
  /// Ids (in plan()) of every value a kernel stores, graph outputs and intermediates.
  const std::vector<unsigned> &storedValues() const { return stored_; }

  /// Uploads `inputs` (graph input order), runs every kernel (one CUDA graph replay, or
  /// stream launches when `useGraph` is false or the program cannot be captured), and
  /// downloads the outputs (graph output order). Outputs are poisoned first, so an element
  /// no kernel wrote shows as NaN.
  std::vector<Tensor> run(const std::vector<Tensor> &inputs, bool useGraph = true);
  /// The reference interpreter's outputs for the plan: exact math, with every value the
  /// plan stores rounded to its dtype, as the kernels round it.
  std::vector<Tensor> reference(const std::vector<Tensor> &inputs) const;
  /// "" when every one of `outputs` matches the reference within its dtype's tolerance
  /// (docs/language.md, Tolerances: bounds from each op's error analysis), else which
  /// output and where.
  std::string check(const std::vector<Tensor> &inputs, const std::vector<Tensor> &outputs) const;
  /// Times the program on device copies of `inputs` (see Benchmark.h).
  ProgramTiming bench(const std::vector<Tensor> &inputs, const Target &predictOn,
                      const TimingOptions &o = {});

private:
  compiler::CompiledModule module_;
  std::unique_ptr<Executable> exe_;
  double compileLoadMs_ = 0;
  compiler::CacheStats cacheUse_;
  std::vector<unsigned> stored_;
  std::vector<AutotuneResult> autotuned_;
};

} // namespace kfuse::runtime
