#pragma once
/// The reductions (sum, mean, amax, amin over `axes`, with `keepdims`): their axes and shapes,
/// one rule for the builder, the verifier, the interpreter, fusion and codegen.
///
///   %m = amax %x, axes=[-1], keepdims=true     // f32[4, 8] -> f32[4, 1]
///
/// Axes count from the end when negative; an axis out of range, an axis named twice, an empty
/// list and amax/amin over an axis of size 0 are errors naming the op and the shape.
#include "ir/Attrs.h"
#include "ir/Shape.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/SmallVector.h>

namespace kfuse {

class Node;

/// Reduced axes as a mask over the input's dims (true = reduced).
using AxisMask = llvm::SmallVector<bool, 4>;

/// `axes` checked against `in` for op `k` and normalized to a mask; throws kfuse::Error.
AxisMask reductionMask(OpKind k, const TensorType &in, const IntList &axes);
/// The input's shape with the masked dims removed, or set to 1 with `keepdims`.
Shape reducedShape(llvm::ArrayRef<int64_t> in, llvm::ArrayRef<bool> mask, bool keepdims);
/// The mask of a reduction node (its operand's shape and its axes).
AxisMask reductionMask(const Node *n);
/// The reduction's identity as accumulated (f32): 0 for sum/mean, -inf/+inf for amax/amin.
double reductionIdentity(OpKind k);

} // namespace kfuse
