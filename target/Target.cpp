#include "target/Target.h"

#include "ir/Error.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>

namespace kfuse {

size_t Target::sharedPerBlock() const {
  if (sm >= 90)
    return 227 * 1024;
  if (sm == 80)
    return 163 * 1024;
  if (sm >= 86)
    return 99 * 1024;
  return 64 * 1024;
}

size_t Target::sharedPerSM() const {
  return size_t(sm >= 90 ? 228 : sm == 80 ? 164 : sm >= 86 ? 100 : 64) * 1024;
}

double Target::peakFlops(DType t, bool tf32) const {
  if (t != DType::F32)
    return flopsPerSecond;
  return tf32 ? flopsPerSecond / 2 : flopsPerSecond * (67.0 / 989.0);
}

std::vector<Target> builtinTargets() {
  Target h200; // the defaults: measured on the H200
  Target h100 = h200;
  h100.name = "h100"; // H100 SXM's data sheet: 3.35 TB/s, 989 TFLOP/s dense bf16
  h100.bytesPerSecond = 3.35e12;
  h100.flopsPerSecond = 989e12;
  // Measured on an H100 80GB HBM3 (bench/graphgap/run.sh, 2026-12-07, models.md): a lone
  // small kernel's graph replay about 4 us, each further kernel of one graph 1.03-1.16 us.
  h100.kernelSeconds = 4e-6;
  h100.graphKernelSeconds = 1.1e-6;
  Target a100 = targetFor(80, 108);
  a100.name = "a100"; // A100 SXM 80 GB's data sheet: 2.04 TB/s, 312 TFLOP/s dense bf16
  a100.bytesPerSecond = 2.04e12;
  a100.flopsPerSecond = 312e12;
  a100.kernelSeconds = a100.graphKernelSeconds = 0;
  Target seed = h100;
  seed.name = "seed"; // the worked numbers kfuse started from: 3.35 TB/s and 1979 TFLOP/s
  seed.flopsPerSecond = 1979e12;
  seed.kernelSeconds = seed.graphKernelSeconds = 0;
  return {h200, h100, a100, seed};
}

static bool parsePositive(std::string_view s, double &out) {
  std::string str(s);
  char *end = nullptr;
  out = std::strtod(str.c_str(), &end);
  return !str.empty() && end == str.c_str() + str.size() && std::isfinite(out) && out > 0;
}

Target parseTarget(std::string_view spec) {
  for (const Target &t : builtinTargets())
    if (spec == t.name)
      return t;
  // NAME:BW:TF[:FIXED_us[:SMS]]; every number positive (the fixed cost may be 0).
  std::vector<std::string_view> f;
  for (size_t at = 0;;) {
    size_t c = spec.find(':', at);
    f.push_back(spec.substr(at, c == spec.npos ? spec.npos : c - at));
    if (c == spec.npos)
      break;
    at = c + 1;
  }
  double bw = 0, tf = 0, fixedUs = 0, sms = 132;
  if (f.size() < 3 || f.size() > 5 || f[0].empty() || !parsePositive(f[1], bw) ||
      !parsePositive(f[2], tf) ||
      (f.size() >= 4 && f[3] != "0" && !parsePositive(f[3], fixedUs)) ||
      (f.size() == 5 && (!parsePositive(f[4], sms) || sms != std::floor(sms) || sms > 4096)))
    fail("unknown device '{}'; use h200, h100, a100, seed or "
         "NAME:BW_TBps:TFLOPs[:FIXED_us[:SMS]] (e.g. l40s:0.864:362:4:142)",
         spec);
  Target t;
  t.name = std::string(f[0]);
  t.bytesPerSecond = bw * 1e12;
  t.flopsPerSecond = tf * 1e12;
  t.kernelSeconds = t.graphKernelSeconds = fixedUs * 1e-6;
  t.smCount = static_cast<unsigned>(sms);
  return t;
}

Target withArch(Target t, const std::string &arch) {
  size_t end = arch.size() - (!arch.empty() && arch.back() == 'a' ? 1 : 0);
  if (arch.rfind("sm_", 0) != 0 || end <= 3 || end - 3 > 4 ||
      arch.find_first_not_of("0123456789", 3) < end)
    fail("--arch must look like sm_90 or sm_90a, got '{}'", arch);
  t.sm = static_cast<unsigned>(std::stoul(arch.substr(3, end - 3)));
  t.archSpecific = end != arch.size();
  if (t.sm < 75)
    fail("--arch {}: NVRTC 13 and kfuse's kernels need sm_75 or newer", arch);
  if (t.archSpecific && t.sm != 90)
    fail("--arch {}: kfuse uses arch-specific features only on sm_90a", arch);
  return t;
}

Target targetFor(unsigned sm, unsigned smCount, bool archSpecific, unsigned clusterPairs) {
  Target t;
  t.sm = sm;
  t.smCount = smCount;
  t.archSpecific = archSpecific;
  t.clusterPairs = clusterPairs;
  return t;
}

std::string compileArch(const Target &t) {
  return fmt::format("sm_{}{}", t.sm, t.sm == 90 && t.archSpecific ? "a" : "");
}

} // namespace kfuse
