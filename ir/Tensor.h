#pragma once
/// Tensor: a TensorType with its values as float64, row-major. The reference interpreter,
/// the .npy reader/writer and the random input generator all trade in this one plain value,
/// so a test can build, compare and print tensors without any device in the picture.
#include "ir/Shape.h"

#include <string>
#include <vector>

namespace kfuse {

struct Tensor {
  TensorType type;
  std::vector<double> data; ///< row-major, size == type.numElements()

  Tensor() = default;
  /// A zero-filled tensor of type `t`.
  explicit Tensor(TensorType t) : type(std::move(t)), data(static_cast<size_t>(type.numElements())) {}
  Tensor(TensorType t, std::vector<double> values) : type(std::move(t)), data(std::move(values)) {}

  int64_t numElements() const { return static_cast<int64_t>(data.size()); }
  DType dtype() const { return type.dtype; }
  const Shape &shape() const { return type.shape; }
};

/// Rounds every element to `t.dtype` (roundToDType: round to nearest even, NaN kept).
void roundInPlace(Tensor &t);

/// Min, max and mean over the non-NaN elements, and how many elements are NaN.
struct TensorStats {
  double min = 0, max = 0, mean = 0;
  int64_t nans = 0;
};
TensorStats tensorStats(const Tensor &t);
/// "bf16[64, 11008] min -0.17 max 3.2 mean 0.41" (and " nan 3" when there are NaNs).
std::string summarize(const Tensor &t);

} // namespace kfuse
