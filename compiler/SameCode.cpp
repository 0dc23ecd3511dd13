#include "compiler/SameCode.h"

#include <unordered_map>

namespace kfuse::compiler {

std::string codeIdentity(std::string_view source, std::string_view mangled) {
  std::string out;
  out.reserve(source.size());
  size_t i = 0, n = source.size();
  while (i < n) {
    if (source[i] == '/' && i + 1 < n && source[i + 1] == '/') {
      while (i < n && source[i] != '\n')
        ++i;
      continue;
    }
    if (!mangled.empty() && source.substr(i, mangled.size()) == mangled) {
      out += '\x01';
      i += mangled.size();
      continue;
    }
    out += source[i++];
  }
  return out;
}

std::vector<int> firstWithSameCode(const std::vector<std::string_view> &sources,
                                   const std::vector<std::string_view> &mangled) {
  std::vector<int> first(sources.size(), -1);
  std::unordered_map<std::string, int> seen;
  for (size_t i = 0; i < sources.size(); ++i) {
    auto [it, added] = seen.emplace(codeIdentity(sources[i], mangled[i]), static_cast<int>(i));
    if (!added)
      first[i] = it->second;
  }
  return first;
}

} // namespace kfuse::compiler
