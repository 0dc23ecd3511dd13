#pragma once
/// CUDA C for Reduce kernels (codegen/ReduceSpec.h says what they do).
#include "codegen/CudaCodegen.h"
#include "codegen/KernelSpec.h"

namespace kfuse::codegen {

class Emitter;

/// Appends kernel `k` (a ReduceSpec) to `e`: one __global__ function, rows in a
/// grid-stride loop.
void emitReduceKernel(Emitter &e, const KernelSpec &k);

} // namespace kfuse::codegen
