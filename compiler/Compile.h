#pragma once
/// The compiler driver: the one place the pipeline is assembled. compile() takes a Graph
/// through every stage once, in the order data flows:
///
///   Graph -> passes (-O2, or none) -> kernel specs -> CUDA C per kernel -> cubins
///         (one NVRTC program per kernel, on a thread pool, through the kernel cache)
///         -> launch shapes and expected times
///
/// and hands back a CompiledModule, a plain value: the CLI prints, reports and dumps it,
/// runtime::Executable loads, binds and launches it, the autotuner times its candidates
/// with it. Nothing after compile() runs a pass or generates code again.
///
///   compiler::CompileOptions o;                     // -O2, sm_90a, exact f32
///   compiler::CompiledModule m = compiler::compile(g, o);
///   runtime::Executable exe(driver, m);
#include "codegen/CudaCodegen.h"
#include "codegen/GemmTuning.h"
#include "analysis/KernelEstimate.h"
#include "codegen/KernelSpec.h"
#include "target/Target.h"
#include "passes/Fusion.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kfuse::compiler {

/// How the graph becomes kernels.
enum class Planning : uint8_t {
  Fused,   ///< the -O2 pipeline: simplify, cse, dce, fuse
  Unfused, ///< no passes: every op its own kernel (the unfused plan)
  AsGiven, ///< the graph's kernel regions as they are (a plan made earlier, or by hand)
};

/// How far compile() goes.
enum class Stage : uint8_t {
  Plan,   ///< the planned graph and the fusion decisions only
  Source, ///< and the kernels' specs, CUDA C, launches and expected times (report, dot)
  Cubin,  ///< and every kernel compiled by NVRTC
};

/// Every choice compile() makes, in one place: what to plan, the device it is for (target
/// facts), what the user allows (policy), how far to go and where to write the stages.
struct CompileOptions {
  Planning planning = Planning::Fused;
  /// The device (target/Target.h): what codegen generates for (architecture, SMs, 2-CTA
  /// clusters, shared memory) and what the expected times assume (bandwidth, FLOP rates,
  /// fixed cost per kernel). The runtime replaces the first part with the GPU's own.
  Target target;
  /// User policy: f32 matmuls on tensor cores with inputs rounded to TF32 (default exact).
  bool allowTf32 = false;
  /// GEMM configurations measured earlier (runtime/Autotune.h); applied where they hold.
  const codegen::GemmTuning *tuning = nullptr;
  /// Called with the kernels as first built; the tuning it returns rebuilds them (the
  /// autotuner measures on the device between planning and codegen).
  std::function<codegen::GemmTuning(const std::vector<codegen::KernelSpec> &)> tuner;
  /// Threads per block of elementwise kernels and their unroll (codegen::CodegenOptions).
  codegen::CodegenOptions codegen;
  /// How far to go: Source stops before NVRTC (no cubins).
  Stage until = Stage::Cubin;
  /// Also keep each kernel's PTX (a second NVRTC compile that bypasses the cache).
  bool wantPtx = false;
  /// Compile threads; 0: one per hardware thread (at most one per kernel).
  unsigned jobs = 0;
  /// Writes every stage under this directory (see Dump.h); "" reads KFUSE_DUMP.
  std::string dumpDir;
  /// Keeps the IR after each pass in CompiledModule::passDumps (on when dumping).
  bool keepPassDumps = false;
};

/// What ptxas said about one kernel (-v); -1 where not known (a disk cache entry without
/// its report).
struct PtxasInfo {
  int registers = -1;
  int spillStores = -1, spillLoads = -1;
  int stackBytes = -1;
  int sharedBytes = -1; ///< static shared memory
};

/// One kernel, compiled.
struct CompiledKernel {
  codegen::KernelSpec spec;
  std::string source;            ///< a standalone translation unit: helpers, then the kernel
  std::string cubin;             ///< empty when compiled until Source
  /// The function the cubin defines for this kernel: spec.mangled, or the name of the
  /// earlier kernel whose code is the same (sameCodeAs), compiled once for both.
  std::string entry;
  int sameCodeAs = -1;           ///< that kernel's index in the module, or -1
  std::string ptx;               ///< with wantPtx
  std::string ptxasLog;          ///< ptxas -v's lines for this program
  PtxasInfo ptxas;
  codegen::LaunchConfig launch;  ///< grid, block, dynamic shared memory
  KernelEstimate estimate;
  double compileMs = 0;          ///< codegen + NVRTC (or the cache) for this kernel
  bool cached = false;           ///< the cubin came from the memory or disk cache
};

struct CompiledModule {
  std::string name;
  /// The graph as given (kept with keepPassDumps or a dump), and as planned (kernel regions
  /// as the kernels run); null for a module compiled from specs (compileKernels).
  std::shared_ptr<const Graph> input, plan;
  FusionLog fusion;                   ///< the fusion pass's decisions with reasons
  std::vector<std::pair<std::string, std::string>> passDumps; ///< (pass, IR after it)
  std::vector<CompiledKernel> kernels; ///< in launch order (producers first)
  std::string arch;                   ///< NVRTC's --gpu-architecture
  std::vector<std::string> nvrtcOptions;
  Target target;
  bool allowTf32 = false; ///< the policy it was compiled under
  /// Graph node ids bound to the caller's buffers: inputs in order, then outputs in order.
  std::vector<unsigned> inputIds, outputIds;
  /// Per output: -1 when a kernel writes it, else the input (i) or earlier output (-2 - j)
  /// it is a copy of (`output %x` of an input, or the same value twice).
  std::vector<int> outputCopyOf;
  std::vector<size_t> outputBytes;
  double planMs = 0, codegenMs = 0, nvrtcWallMs = 0, totalMs = 0;
  unsigned jobs = 1;

  double expectedSeconds() const;
  std::vector<codegen::KernelSpec> specs() const;
};

/// The driver. Throws kfuse::Error for a graph codegen cannot build or NVRTC refuses.
CompiledModule compile(const Graph &g, const CompileOptions &o = {});
/// Kernels given as specs (the autotuner's candidates, each reading and writing external
/// buffers bound in the order of `inputIds` and `outputIds`), from codegen on.
CompiledModule compileKernels(std::vector<codegen::KernelSpec> specs,
                              std::vector<unsigned> inputIds, std::vector<unsigned> outputIds,
                              const CompileOptions &o = {});

/// "-v" lines of ptxas for the function `mangled` in `log`.
PtxasInfo parsePtxasInfo(const std::string &log, const std::string &mangled);

} // namespace kfuse::compiler
