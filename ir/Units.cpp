#include "ir/Units.h"

#include <cmath>
#include <fmt/format.h>

namespace kfuse {

static std::string scaled(double v, const char *const units[], int n, const char *fmtSpec) {
  int i = 0;
  while (i + 1 < n && std::abs(v) >= 1000.0) {
    v /= 1000.0;
    ++i;
  }
  return fmt::format(fmt::runtime(fmtSpec), v, units[i]);
}

std::string formatBytes(double b) {
  static const char *const u[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  return scaled(b, u, 6, "{:.3g} {}");
}

std::string formatFlops(double f) {
  static const char *const u[] = {"FLOP", "KFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP"};
  return scaled(f, u, 6, "{:.4g} {}");
}

std::string formatSeconds(double s) {
  if (s >= 1.0)
    return fmt::format("{:.3g} s", s);
  if (s >= 1e-3)
    return fmt::format("{:.3g} ms", s * 1e3);
  if (s >= 1e-6)
    return fmt::format("{:.3g} us", s * 1e6);
  return fmt::format("{:.3g} ns", s * 1e9);
}

std::string plural(long long n, std::string_view one, std::string_view many) {
  if (n == 1 || n == -1)
    return fmt::format("{} {}", n, one);
  return many.empty() ? fmt::format("{} {}s", n, one) : fmt::format("{} {}", n, many);
}

} // namespace kfuse
