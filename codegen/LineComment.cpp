#include "codegen/LineComment.h"

#include <algorithm>
#include <fmt/format.h>

namespace kfuse::codegen {

std::string commentText(std::string_view text, size_t cap) {
  cap = std::max<size_t>(cap, 3);
  std::string body;
  size_t fits = 0; // the length of `body` that leaves room for "..."
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const char next = i + 1 < text.size() ? text[i + 1] : '\0';
    if (c < 0x20 || c >= 0x7f || c == '\\' || (c == '*' && next == '/') ||
        (c == '?' && next == '?'))
      fmt::format_to(std::back_inserter(body), "\\x{:02x}", c);
    else
      body += static_cast<char>(c);
    if (body.size() > cap) {
      body.resize(fits);
      body += "...";
      break;
    }
    if (body.size() + 3 <= cap)
      fits = body.size();
  }
  return body;
}

std::string lineComment(std::string_view text) {
  return text.empty() ? std::string() : "  // " + commentText(text);
}

} // namespace kfuse::codegen
