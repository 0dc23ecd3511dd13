#include "codegen/ReduceIndex.h"

#include <fmt/format.h>

namespace kfuse::codegen {

std::string reduceOffset(const Shape &S, const AxisMask &mask, const SpecTensor &t, bool reduced,
                         const std::string &var, const std::string &suffix) {
  auto lit = [&](int64_t v) { return fmt::format("{}{}", v, suffix); };
  // A part or a tensor with a dim of 0 is never indexed (and its dims' products could
  // overflow).
  for (size_t d = 0; d < S.size(); ++d)
    if ((mask[d] == reduced && S[d] == 0) || t.aligned[d] == 0)
      return lit(0);
  std::vector<int64_t> stride(S.size(), 0);
  int64_t s = 1;
  for (size_t d = S.size(); d-- > 0;) {
    stride[d] = t.aligned[d] == 1 ? 0 : s;
    s *= t.aligned[d];
  }
  // Dims of this part innermost first, merged where both the part's index and the
  // tensor's layout run on contiguously.
  struct Group { int64_t size, inner, stride; };
  std::vector<Group> groups;
  int64_t inner = 1;
  for (size_t d = S.size(); d-- > 0;) {
    if (mask[d] != reduced || S[d] == 1)
      continue;
    if (!groups.empty() && ((groups.back().stride == 0 && stride[d] == 0) ||
                            (groups.back().stride != 0 &&
                             groups.back().stride * groups.back().size == stride[d])))
      groups.back().size *= S[d];
    else
      groups.push_back({S[d], inner, stride[d]});
    inner *= S[d];
  }
  std::string sum;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].stride == 0)
      continue;
    std::string c = groups[g].inner == 1 ? var : fmt::format("{} / {}", var, lit(groups[g].inner));
    if (g + 1 < groups.size())
      c = fmt::format("({}) % {}", c, lit(groups[g].size));
    if (groups[g].stride != 1)
      c = fmt::format("({}) * {}", c, lit(groups[g].stride));
    sum += sum.empty() ? c : " + " + c;
  }
  return sum.empty() ? lit(0) : sum;
}

} // namespace kfuse::codegen
