#pragma once
/// Executable: a compiled module (compiler/Compile.h) loaded on the current device. It only
/// loads, binds and launches: one driver module per kernel, the memory plan and its arena.
/// Buffers are the caller's: inputs in graph input order, outputs in graph output order
/// (device pointers). It launches the kernels on a stream, or records them once as a CUDA
/// graph (explicit kernel nodes with dependency edges) that is replayed and can be rebound
/// to other buffers.
#include "codegen/KernelEmitter.h"
#include "codegen/KernelSpec.h"
#include "compiler/Compile.h"
#include "runtime/Driver.h"
#include "runtime/MemoryPlan.h"

#include <array>
#include <map>
#include <llvm/ADT/ArrayRef.h>
#include <string>
#include <vector>

namespace kfuse::runtime {

/// `base` (its rates and policy-free facts) with the architecture, SMs and 2-CTA clusters of
/// the GPU `d` (arch-specific features as `base` allows).
Target deviceTarget(const Driver &d, Target base = {});
/// Compile options for the device `d`: its target, everything else as `o` has it.
compiler::CompileOptions deviceOptions(const Driver &d, compiler::CompileOptions o = {});
/// `plan` with its kernel regions as they are (a plan made earlier or by hand), compiled for
/// `d` with `o`'s other choices: what a test or benchmark that planned itself loads.
compiler::CompiledModule compileAsGiven(const Driver &d, const Graph &plan,
                                        compiler::CompileOptions o = {});

class Executable {
public:
  /// Loads every kernel of `m` (compiled for this device's architecture) and allocates the
  /// arena of its intermediates.
  Executable(Driver &d, const compiler::CompiledModule &m);
  ~Executable();
  Executable(const Executable &) = delete;
  Executable &operator=(const Executable &) = delete;

  const std::vector<codegen::KernelSpec> &specs() const { return specs_; }
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
  CUDA_KERNEL_NODE_PARAMS nodeParams(unsigned k);
  void bindKernel(size_t k, const std::map<unsigned, CUdeviceptr> &where);
  /// Frees the arena and the workspaces (the destructor, and a constructor that throws).
  void freeDeviceMemory();

  Driver &d_;
  std::vector<codegen::KernelSpec> specs_;
  MemoryPlan plan_;
  std::vector<unsigned> inputIds_, outputIds_;
  std::vector<codegen::LaunchConfig> configs_;
  std::vector<CUmodule> modules_; ///< one per distinct kernel code (each its own NVRTC program)
  std::vector<CUfunction> functions_;
  CUdeviceptr arena_ = 0;
  /// Per kernel: its workspace (KernelParam::Workspace), zeroed once; 0 where it has none.
  std::vector<CUdeviceptr> workspaces_;
  std::vector<std::vector<CUdeviceptr>> args_;
  std::vector<std::vector<void *>> argPtrs_;
  /// Per kernel: its parameters (codegen/KernelEmitter.h), and the tensor maps among them,
  /// at the parameter's position.
  std::vector<std::vector<codegen::KernelParam>> params_;
  std::vector<std::vector<CUtensorMap>> tensorMaps_;
  /// Per graph output: -1 when a kernel writes it; otherwise the graph input (i) or
  /// earlier output (-2 - j) it is a copy of (`output %x` of an input, or twice the same).
  std::vector<int> copySource_;
  std::vector<size_t> outputBytes_;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
  std::vector<CUgraphNode> nodes_;
};

} // namespace kfuse::runtime
