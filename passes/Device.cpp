#include "passes/Device.h"

#include "ir/Error.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace kfuse {

std::vector<Device> builtinDevices() {
  return {{"h100", 3.35e12, 1979e12}, {"h200", 4.19e12, 790e12}};
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
  size_t c1 = spec.find(':');
  size_t c2 = c1 == spec.npos ? spec.npos : spec.find(':', c1 + 1);
  double bw = 0, tf = 0;
  if (c1 == spec.npos || c2 == spec.npos || c1 == 0 ||
      !parsePositive(spec.substr(c1 + 1, c2 - c1 - 1), bw) ||
      !parsePositive(spec.substr(c2 + 1), tf))
    fail("unknown device '{}'; use h100, h200 or NAME:BW_TBps:TFLOPs (e.g. a100:2.0:312)", spec);
  return {std::string(spec.substr(0, c1)), bw * 1e12, tf * 1e12};
}

} // namespace kfuse
