#pragma once
/// Executable: a graph compiled for the current device. It holds the module, the kernel
/// functions, the memory plan and its arena. Buffers are the caller's: inputs in graph
/// input order, outputs in graph output order (device pointers). It launches the kernels
/// on a stream, or records them once as a CUDA graph (explicit kernel nodes with
/// dependency edges) that is replayed and can be rebound to other buffers.
#include "codegen/CudaCodegen.h"
#include "codegen/KernelSpec.h"
#include "runtime/Driver.h"
#include "runtime/MemoryPlan.h"

#include <array>
#include <llvm/ADT/ArrayRef.h>
#include <string>
#include <vector>

namespace kfuse::runtime {

/// The codegen target of the device `d` (arch-specific features when `archSpecific`; f32
/// matmuls on TF32 tensor cores when `allowTf32`).
codegen::Target deviceTarget(const Driver &d, bool archSpecific = true, bool allowTf32 = false);

class Executable {
public:
  /// `options` choose codegen variants (block size stays codegen::kDefaultBlock); GEMM
  /// kernels take `tuning`'s measured configurations where it has their problem.
  Executable(Driver &d, const Graph &g, const codegen::CodegenOptions &options = {},
             const codegen::GemmTuning *tuning = nullptr);
  /// Kernels given as specs (KernelSpec::index = position), every tensor they read or write
  /// an external buffer, bound in the order of `inputIds` and `outputIds`: the autotuner's
  /// candidates, each launched alone.
  Executable(Driver &d, std::vector<codegen::KernelSpec> specs, std::vector<unsigned> inputIds,
             std::vector<unsigned> outputIds, const codegen::CodegenOptions &options = {});
  ~Executable();
  Executable(const Executable &) = delete;
  Executable &operator=(const Executable &) = delete;

  const std::vector<codegen::KernelSpec> &specs() const { return specs_; }
  const std::string &source() const { return source_; }
  const MemoryPlan &memoryPlan() const { return plan_; }
  codegen::LaunchConfig launchConfig(unsigned kernel) const { return configs_[kernel]; }

  /// Launches every kernel in order on `stream`.
  void launch(llvm::ArrayRef<CUdeviceptr> inputs, llvm::ArrayRef<CUdeviceptr> outputs,
              CUstream stream);
  /// Launches kernel `k` alone (buffers as bound by the last launch/bind).
  void launchKernel(unsigned k, CUstream stream);
  /// Resolves every kernel's parameters for these buffers.
  void bind(llvm::ArrayRef<CUdeviceptr> inputs, llvm::ArrayRef<CUdeviceptr> outputs);

  /// Whether the program can be one CUDA graph (not yet when an output is a graph input or
  /// the same value twice: those are copies, not kernels).
  bool canCaptureGraph() const;
  /// Builds and instantiates the CUDA graph for the bound buffers.
  void captureGraph(llvm::ArrayRef<CUdeviceptr> inputs, llvm::ArrayRef<CUdeviceptr> outputs);
  /// Points the instantiated graph's kernels at other buffers (no re-instantiation).
  void rebindGraph(llvm::ArrayRef<CUdeviceptr> inputs, llvm::ArrayRef<CUdeviceptr> outputs);
  void replay(CUstream stream);

private:
  /// Generates, compiles and loads specs_ (inputIds_/outputIds_ set): the memory plan, the
  /// launch configurations, the module and its functions, the arena.
  void load(const codegen::CodegenOptions &options);
  CUDA_KERNEL_NODE_PARAMS nodeParams(unsigned k);

  Driver &d_;
  std::vector<codegen::KernelSpec> specs_;
  std::string source_;
  MemoryPlan plan_;
  std::vector<unsigned> inputIds_, outputIds_;
  std::vector<codegen::LaunchConfig> configs_;
  CUmodule module_ = nullptr;
  std::vector<CUfunction> functions_;
  CUdeviceptr arena_ = 0;
  std::vector<std::vector<CUdeviceptr>> args_;
  std::vector<std::vector<void *>> argPtrs_;
  /// Per kernel, A's and B's TMA tensor maps (Hopper GEMM kernels only).
  std::vector<std::array<CUtensorMap, 2>> tensorMaps_;
  /// Per graph output: -1 when a kernel writes it; otherwise the graph input (i) or
  /// earlier output (-2 - j) it is a copy of (`output %x` of an input, or twice the same).
  std::vector<int> copySource_;
  std::vector<size_t> outputBytes_;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
  std::vector<CUgraphNode> nodes_;
};

} // namespace kfuse::runtime
