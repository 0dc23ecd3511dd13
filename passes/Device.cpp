#include "passes/Device.h"

#include "ir/Error.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace kfuse {

std::vector<Device> builtinDevices() {
  return {{"h100", 3.35e12, 1979e12, 0}, {"h200", 4.19e12, 790e12, 4e-6}};
}

static bool parsePositive(std::string_view s, double &out) {
  std::string str(s);
  char *end = nullptr;
  out = std::strtod(str.c_str(), &end);
  return !str.empty() && end == str.c_str() + str.size() && std::isfinite(out) && out > 0;
}

Device parseDevice(std::string_view spec) {
  for (const Device &d : builtinDevices())
    if (spec == d.name)
      return d;
  // NAME:BW:TF or NAME:BW:TF:FIXED_us; every number positive (the fixed cost may be 0).
  std::vector<std::string_view> f;
  for (size_t at = 0;;) {
    size_t c = spec.find(':', at);
    f.push_back(spec.substr(at, c == spec.npos ? spec.npos : c - at));
    if (c == spec.npos)
      break;
    at = c + 1;
  }
  double bw = 0, tf = 0, fixedUs = 0;
  if ((f.size() != 3 && f.size() != 4) || f[0].empty() || !parsePositive(f[1], bw) ||
      !parsePositive(f[2], tf) ||
      (f.size() == 4 && f[3] != "0" && !parsePositive(f[3], fixedUs)))
    fail("unknown device '{}'; use h100, h200 or NAME:BW_TBps:TFLOPs[:FIXED_us] (e.g. "
         "a100:2.0:312)",
         spec);
  return {std::string(f[0]), bw * 1e12, tf * 1e12, fixedUs * 1e-6};
}

} // namespace kfuse
