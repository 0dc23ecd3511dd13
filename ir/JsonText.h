#pragma once
/// Text for the JSON the tools print (reports, fusion decisions): a string's contents with
/// `"` and `\` escaped and control characters as \u00XX.
#include <fmt/format.h>
#include <string>

namespace kfuse {

inline std::string jsonEscape(const std::string &s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", c);
      continue;
    }
    out += c;
  }
  return out;
}

} // namespace kfuse
