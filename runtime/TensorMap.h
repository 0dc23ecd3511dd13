#pragma once
/// TMA tensor maps for the Hopper GEMM: codegen fixes each operand's geometry
/// (codegen::TmaOperand); the runtime encodes it for the operand's device pointer, once per
/// bind, and passes the 128-byte map by value as a kernel parameter.
#include "codegen/GemmSpec.h"
#include "runtime/Driver.h"

#include <string>

namespace kfuse::runtime {

/// Encodes `t` over the 16-bit operand at `ptr` (cuTensorMapEncodeTiled, 128-byte swizzle,
/// zero fill out of range); throws kfuse::Error naming `what` and the geometry on failure.
CUtensorMap encodeTensorMap(const Driver &d, const codegen::TmaOperand &t, DType dtype,
                            CUdeviceptr ptr, const std::string &what);

} // namespace kfuse::runtime
