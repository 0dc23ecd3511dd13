#include "ir/Compare.h"

#include <cmath>
#include <fmt/format.h>

namespace kfuse {

Tolerance Tolerance::of(DType t, double scale) {
  switch (t) {
  case DType::F32:
    return {1e-5 * scale, 1e-6 * scale};
  case DType::F16:
    return {4e-3 * scale, 1e-3 * scale};
  case DType::BF16:
    return {3e-2 * scale, 1e-2 * scale};
  }
  return {1e-5 * scale, 1e-6 * scale};
}

DType coarserDType(DType a, DType b) {
  auto looseness = [](DType t) { return t == DType::F32 ? 0 : t == DType::F16 ? 1 : 2; };
  return looseness(b) > looseness(a) ? b : a;
}

std::string compareValues(const std::vector<double> &got, const std::vector<double> &ref,
                          const Tolerance &tol) {
  if (got.size() != ref.size())
    return fmt::format("{} values where the reference has {}", got.size(), ref.size());
  double diff2 = 0, ref2 = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double g = got[i], r = ref[i];
    if (std::isnan(r) || std::isnan(g)) {
      if (std::isnan(r) != std::isnan(g))
        return fmt::format("element {}: got {} where the reference is {}", i, g, r);
      continue;
    }
    if (std::isinf(r) || std::isinf(g)) {
      if (g != r)
        return fmt::format("element {}: got {} where the reference is {}", i, g, r);
      continue;
    }
    if (std::fabs(g - r) > tol.elem * (1.0 + std::fabs(r)))
      return fmt::format(
          "element {}: got {} where the reference is {} (tolerance {:g} * (1 + |ref|))", i, g, r,
          tol.elem);
    diff2 += (g - r) * (g - r);
    ref2 += r * r;
  }
  if (ref2 > 0 && std::sqrt(diff2 / ref2) > tol.norm)
    return fmt::format("relative error norm {:g} above {:g}", std::sqrt(diff2 / ref2), tol.norm);
  return "";
}

} // namespace kfuse
