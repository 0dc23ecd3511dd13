#pragma once
/// CUDA C for GEMM kernels with fused epilogues. Device templates (codegen/cuda: tensor-core
/// mma.sync, f32 FFMA tiles, small-M gemv, wgmma, decode) are instantiated per kernel with every
/// size a compile-time constant; each kernel wraps its epilogue (the spec's ops after the
/// matmul, emitted by the shared element function) in a functor that the template calls
/// once per result element, in registers, before that element's only store.
#include "codegen/KernelSpec.h"

#include <string>

namespace kfuse::codegen {

class Emitter;

/// The epilogue's code weight: the sum of its ops' opCodeWeight (codegen/ScalarExpr.h), the
/// matmul's aside.
unsigned epilogueWeight(const KernelSpec &k);
/// Whether the Hopper kernel runs `k`'s epilogue as a loop over accumulators staged in
/// shared memory (codegen/cuda/gemm_wgmma.cuh) instead of writing it out for each of a
/// thread's values: an epilogue of weight 48 or more, with one 16-bit output, one product.
bool epilogueRolled(const KernelSpec &k);

/// The epilogue element function, its functor and the __global__ kernel for `k` (k.gemm() set).
void emitGemmKernel(Emitter &e, const KernelSpec &k);

} // namespace kfuse::codegen
