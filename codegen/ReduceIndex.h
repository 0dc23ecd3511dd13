#pragma once
/// The index expressions of a Reduce kernel (codegen/ReduceSpec.h): where an element of a
/// tensor aligned to the iteration shape lies, given a row's or an element's linear index.
#include "codegen/KernelSpec.h"

#include <string>

namespace kfuse::codegen {

/// The offset of tensor `t` (aligned to S) over the kept (`reduced` false) or reduced dims of
/// S (`mask`: the reduced ones), given the linear index `var` of the row (m) or of the element
/// in the row (n), as CUDA C with integer literals of `suffix` ("u" or "ull"). Dims that run on
/// contiguously in both the index and the tensor's layout are merged into one term.
std::string reduceOffset(const Shape &S, const AxisMask &mask, const SpecTensor &t, bool reduced,
                         const std::string &var, const std::string &suffix);

} // namespace kfuse::codegen
