#pragma once
/// Comparing a computed tensor with the reference interpreter's, by the dtype tolerances of
/// docs/language.md (Tolerances): per element |got - ref| <= elem * (1 + |ref|) and, over
/// the tensor, ||got - ref|| / ||ref|| <= norm; NaN passes only where the reference is NaN, and an
/// infinity only where the reference is the same infinity. For a matmul the bound grows
/// with K: pass `scale` (1 for elementwise).
#include "ir/Tensor.h"

#include <string>

namespace kfuse {

struct Tolerance {
  double elem = 0, norm = 0;
  /// f32 1e-5 / 1e-6, f16 4e-3 / 1e-3, bf16 3e-2 / 1e-2, times `scale`.
  static Tolerance of(DType t, double scale = 1.0);
};

/// Of two dtypes, the one with the looser tolerance (bf16 > f16 > f32): the bound an output
/// gets when it was computed from a value stored, and so rounded, in the other.
DType coarserDType(DType a, DType b);

/// "" when `got` matches `ref`, else what and where the first mismatch is. Both hold the
/// same number of values.
std::string compareValues(const std::vector<double> &got, const std::vector<double> &ref,
                          const Tolerance &tol);
/// The same with each element's bound widened by `u * magnitude[i]` and the norm's by
/// `u * ||magnitude||` (ir/ErrorBound.h: each element's error scale); an element whose
/// magnitude is not finite is held to no bound.
std::string compareValues(const std::vector<double> &got, const std::vector<double> &ref,
                          const Tolerance &tol, const std::vector<double> &magnitude, double u);

} // namespace kfuse
