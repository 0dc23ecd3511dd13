#include "ir/Suggest.h"

#include "ir/Op.h"

#include <algorithm>
#include <fmt/format.h>

namespace kfuse {
namespace {

/// Edits (insert, delete, replace, swap two neighbours) from a to b: the optimal string
/// alignment distance, so 'sliu' is one edit from 'silu'.
unsigned editDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<unsigned>> d(a.size() + 1, std::vector<unsigned>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i)
    d[i][0] = static_cast<unsigned>(i);
  for (size_t j = 0; j <= b.size(); ++j)
    d[0][j] = static_cast<unsigned>(j);
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      unsigned cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

} // namespace

std::string didYouMean(std::string_view word, const std::vector<std::string> &candidates) {
  if (word.empty() || word.size() > 64) // a long token is not a misspelled name
    return "";
  // Short words are one edit from many names ('foo' is two from 'log'): one edit for them.
  unsigned limit =
      word.size() <= 4 ? 1 : std::max<unsigned>(2, static_cast<unsigned>(word.size() / 2));
  const std::string *best = nullptr;
  unsigned bestDistance = limit + 1;
  for (const std::string &c : candidates) {
    if (c == word)
      continue;
    unsigned d = editDistance(word, c);
    if (d < bestDistance) {
      bestDistance = d;
      best = &c;
    }
  }
  return best ? fmt::format(" (did you mean '{}'?)", *best) : std::string();
}

std::vector<std::string> opNames() {
  std::vector<std::string> names;
#define KF_OP(E, name, arity, cls)                                                            \
  if (OpKind::E != OpKind::Input)                                                             \
    names.push_back(#name);
#include "ir/Ops.def"
  return names;
}

} // namespace kfuse
