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
  return compareValues(got, ref, tol, {}, 0.0);
}

std::string compareValues(const std::vector<double> &got, const std::vector<double> &ref,
                          const Tolerance &tol, const std::vector<double> &magnitude, double u) {
  if (got.size() != ref.size())
    return fmt::format("{} values where the reference has {}", got.size(), ref.size());
  bool withMagnitude = !magnitude.empty() && u > 0;
  if (withMagnitude && magnitude.size() != ref.size())
    return fmt::format("{} magnitudes for {} values", magnitude.size(), ref.size());
  double diff2 = 0, ref2 = 0, mag2 = 0;
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
    double m = withMagnitude && std::isfinite(magnitude[i]) ? magnitude[i] : 0.0;
    if (withMagnitude && !std::isfinite(magnitude[i]))
      continue; // the terms overflowed: no bound to hold the element to
    double bound = tol.elem * (1.0 + std::fabs(r)) + u * m;
    if (std::fabs(g - r) > bound) {
      if (!withMagnitude)
        return fmt::format(
            "element {}: got {} where the reference is {} (tolerance {:g} * (1 + |ref|))", i, g,
            r, tol.elem);
      return fmt::format("element {}: got {} where the reference is {} (tolerance {:g} * (1 + "
                         "|ref|) + {:g} * {:g}, its error scale)",
                         i, g, r, tol.elem, u, m);
    }
    diff2 += (g - r) * (g - r);
    ref2 += r * r;
    mag2 += m * m;
  }
  double allowed = tol.norm * std::sqrt(ref2) + u * std::sqrt(mag2);
  if (ref2 > 0 && std::sqrt(diff2) > allowed)
    return fmt::format("relative error norm {:g} above {:g}", std::sqrt(diff2 / ref2),
                       allowed / std::sqrt(ref2));
  return "";
}

} // namespace kfuse
