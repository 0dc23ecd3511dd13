#include "codegen/WgmmaCodegen.h"

#include <fmt/format.h>

namespace kfuse::codegen {

/// kf_wgmma<n>::run<DT, TA, TB>(d, descA, descB): one wgmma m64n<n>k16 with f32 accumulators
/// d[0 .. n/2) (scale-d 1: D += A B), bf16 (DT 2) or f16 (DT 1) inputs, transpose bits TA/TB
/// (1: the operand is M- or N-major in shared memory, 0: K-major); DT 0: m64n<n>k8 on f32
/// operands read as TF32, both K-major.
static std::string wgmmaWrapper(unsigned n) {
  unsigned regs = n / 2;
  std::string list, outs;
  for (unsigned i = 0; i < regs; ++i) {
    list += fmt::format("{}%{}", i ? ", " : "", i);
    outs += fmt::format("{}\"+f\"(d[{}])", i ? ", " : "", i);
  }
  auto one = [&](const char *type) {
    return fmt::format("asm volatile(\"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{2}, 0;\\n"
                       "wgmma.mma_async.sync.aligned.m64n{0}k16.f32.{1}.{1} {{{3}}}, %{4}, %{5}, p, "
                       "1, 1, %{6}, %{7};\\n}}\\n\"\n        : {8}\n        : \"l\"(da), "
                       "\"l\"(db), \"r\"(1), \"n\"(TA), \"n\"(TB));",
                       n, type, regs + 2, list, regs, regs + 1, regs + 3, regs + 4, outs);
  };
  // TF32 (k8): K-major operands only, so no transpose immediates.
  std::string tf32 = fmt::format(
      "asm volatile(\"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{1}, 0;\\n"
      "wgmma.mma_async.sync.aligned.m64n{0}k8.f32.tf32.tf32 {{{2}}}, %{3}, %{4}, p, 1, 1;\\n}}\\n\"\n"
      "        : {5}\n        : \"l\"(da), \"l\"(db), \"r\"(1));",
      n, regs + 2, list, regs, regs + 1, outs);
  return fmt::format(
      "template <> struct kf_wgmma<{0}> {{\n"
      "  template <int DT, int TA, int TB>\n"
      "  static __device__ __forceinline__ void run(float *d, unsigned long long da, unsigned "
      "long long db) {{\n"
      "    if (DT == 2)\n      {1}\n    else if (DT == 1)\n      {2}\n    else\n      {3}\n  }}\n}};\n",
      n, one("bf16"), one("f16"), tf32);
}

std::string wgmmaWrappers(const std::vector<unsigned> &widths) {
  std::string out;
  for (unsigned n : widths)
    out += wgmmaWrapper(n);
  return out;
}

} // namespace kfuse::codegen
