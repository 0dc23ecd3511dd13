#include "ir/Tensor.h"

#include <cmath>
#include <fmt/format.h>
#include <limits>

namespace kfuse {

void roundInPlace(Tensor &t) {
  DType dt = t.type.dtype;
  for (double &v : t.data)
    v = roundToDType(v, dt);
}

TensorStats tensorStats(const Tensor &t) {
  TensorStats s;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0;
  int64_t n = 0;
  for (double v : t.data) {
    if (std::isnan(v)) {
      ++s.nans;
      continue;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
    ++n;
  }
  if (n) {
    s.min = lo;
    s.max = hi;
    s.mean = sum / static_cast<double>(n);
  }
  return s;
}

std::string summarize(const Tensor &t) {
  TensorStats s = tensorStats(t);
  std::string out = fmt::format("{} min {:.6g} max {:.6g} mean {:.6g}", t.type.str(), s.min, s.max,
                                s.mean);
  if (s.nans)
    out += fmt::format(" nan {}", s.nans);
  return out;
}

} // namespace kfuse
