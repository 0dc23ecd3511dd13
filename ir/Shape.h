#pragma once
/// Shapes and NumPy broadcasting, and TensorType (a dtype with a shape).
#include "ir/DType.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/SmallVector.h>
#include <optional>
#include <string>

namespace kfuse {

using Shape = llvm::SmallVector<int64_t, 4>;

/// Largest element count kfuse accepts for one tensor (2^48): byte counts stay far from
/// int64 overflow, and index arithmetic in 64 bits is always exact.
inline constexpr int64_t kMaxElements = int64_t(1) << 48;

/// "[64, 4096]"; "[]" for a scalar tensor.
std::string shapeToString(llvm::ArrayRef<int64_t> s);
int64_t numElements(llvm::ArrayRef<int64_t> s);

/// NumPy broadcasting: align from the right, each pair equal or one of them 1.
std::optional<Shape> broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);
/// As broadcastShapes, but throws "OP: shapes A and B do not broadcast (dim i: x vs y)".
Shape broadcastOrThrow(std::string_view op, llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// Throws unless every dim is >= 0 and the element count is at most kMaxElements.
void checkShape(std::string_view what, llvm::ArrayRef<int64_t> s);

struct TensorType {
  DType dtype = DType::F32;
  Shape shape;

  int64_t numElements() const { return kfuse::numElements(shape); }
  int64_t bytes() const { return numElements() * static_cast<int64_t>(dtypeSize(dtype)); }
  size_t rank() const { return shape.size(); }
  /// "bf16[64, 4096]"
  std::string str() const;
  bool operator==(const TensorType &o) const { return dtype == o.dtype && shape == o.shape; }
};

} // namespace kfuse
