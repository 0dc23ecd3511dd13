#pragma once
/// KernelEmitter: what codegen knows about one kernel kind (KernelSpec::kind), behind one
/// interface, so a new kind (a row reduction, say) is one more implementation and one more
/// alternative of KernelKind, and nothing else asks which kind a kernel is:
///  - its device code: the __global__ function and the device functions it calls (the
///    helpers from codegen/cuda that code names are added by emitKernelSource);
///  - its launch shape;
///  - its parameters, in order, as data the runtime binds without knowing the kind;
///  - its FLOPs.
#include "codegen/CudaCodegen.h"
#include "codegen/KernelSpec.h"

#include <vector>

namespace kfuse::codegen {

class Emitter;

/// One kernel parameter: a tensor's device pointer, a TMA tensor map (CUtensorMap, by
/// value) over a tensor, built by the runtime from the pointer and `map`, or the pointer to
/// the kernel's own workspace: `workspaceBytes` of global memory the runtime allocates and
/// zeroes once, and that keeps its contents between launches.
struct KernelParam {
  enum Kind : uint8_t { Pointer, TensorMap, Workspace } kind = Pointer;
  bool output = false; ///< the tensor is outputs[index], else inputs[index]
  unsigned index = 0;
  const TmaOperand *map = nullptr; ///< TensorMap: the box and swizzle (in the spec)
  /// The pointer must be 16-byte aligned (read with 16-byte copies and loads).
  bool aligned16 = false;
  uint64_t workspaceBytes = 0; ///< Workspace: its size
};

class KernelEmitter {
public:
  virtual ~KernelEmitter() = default;
  /// Appends the kernel's device code to `e`.
  virtual void emit(Emitter &e, const KernelSpec &k, const CodegenOptions &o) const = 0;
  /// The launch of `k`; `block` threads and at most `maxBlocks` blocks where the kind lets
  /// the caller choose (elementwise kernels), ignored where its tiling decides (GEMMs).
  virtual LaunchConfig launch(const KernelSpec &k, unsigned block, uint64_t maxBlocks) const = 0;
  virtual std::vector<KernelParam> params(const KernelSpec &k) const = 0;
  virtual double flops(const KernelSpec &k) const = 0;
};

/// The emitter of `k`'s kind.
const KernelEmitter &emitterFor(const KernelSpec &k);

/// The pointer parameters every kind ends with: inputs in spec order, then outputs.
std::vector<KernelParam> pointerParams(const KernelSpec &k);

/// The elementwise kernel's device code (CudaCodegen.cpp).
void emitPointwiseKernel(Emitter &e, const KernelSpec &k, const CodegenOptions &o);

} // namespace kfuse::codegen
