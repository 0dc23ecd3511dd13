#pragma once
/// The CUDA C of one value, shared by every kernel kind: how a dtype is stored, widened to
/// f32 on load and rounded on store, how a literal is written, and each elementwise op as an
/// f32 expression of its operands' expressions. Every op is written here and nowhere else.
#include "codegen/KernelSpec.h"

#include <string>
#include <vector>

namespace kfuse::codegen {

/// The C type a tensor of `t` is stored as: float, or unsigned short for f16/bf16 bits.
const char *storageType(DType t);
/// The f32 value of a stored element `raw`.
std::string loadExpr(DType t, const std::string &raw);
/// The stored bits of the f32 value `v` (round to nearest even for f16/bf16).
std::string storeExpr(DType t, const std::string &v);
/// `f` as a CUDA float literal (NaN and infinities by their bits).
std::string floatLiteral(float f);
/// The unsigned vector type of `bytes` (2, 4, 8 or 16) for vector loads and stores.
const char *vecType(size_t bytes);
/// The elementwise op `op` of kernel `kernel` applied to the f32 expressions `args`; fails
/// for an op that is not elementwise.
std::string opExpr(const SpecOp &op, const std::vector<std::string> &args,
                   const std::string &kernel);
/// About how many instructions opExpr's code for `op` takes: 1 for an arithmetic op, 6 for
/// the fast exp and what is built on it, 20 for a libm function or an IEEE division. What
/// kernels that repeat an op's code for many values weigh to keep their code small.
unsigned opCodeWeight(const SpecOp &op);

} // namespace kfuse::codegen
