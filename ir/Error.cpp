#include "ir/Error.h"

#include <algorithm>
#include <cstdint>

namespace kfuse {

size_t utf8CharLength(std::string_view s) {
  if (s.empty())
    return 0;
  unsigned char c = static_cast<unsigned char>(s[0]);
  if (c < 0x80)
    return 1;
  size_t len;
  uint32_t cp;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (s.size() < len)
    return 0;
  for (size_t k = 1; k < len; ++k) {
    unsigned char d = static_cast<unsigned char>(s[k]);
    if ((d & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (d & 0x3F);
  }
  bool overlong = (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
  if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return len;
}

namespace {

/// Appends the character `s` starts with (s is not empty) as a message shows it; returns
/// how many bytes of `s` it took. The C1 controls (U+0080..U+009F) are escaped too: some
/// terminals act on them (U+009B is CSI) even when they arrive as valid UTF-8.
size_t appendShown(std::string &out, std::string_view s, bool keepTab) {
  size_t len = utf8CharLength(s);
  unsigned char c = static_cast<unsigned char>(s[0]);
  bool control = (c < 0x20 && !(keepTab && c == '\t')) || c == 0x7f ||
                 (len == 2 && c == 0xC2 && static_cast<unsigned char>(s[1]) < 0xA0);
  if (len == 0 || control) {
    len = std::max<size_t>(len, 1);
    for (size_t k = 0; k < len; ++k)
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(s[k]));
    return len;
  }
  out.append(s.data(), len);
  return len;
}

/// Where the character that ends at byte `end` (> 0) of `s` begins: the UTF-8 sequence
/// ending there, or the byte before `end` alone. Looks back at most 4 bytes, so walking
/// back over a run of stray continuation bytes stays one byte per step.
size_t charStartBefore(std::string_view s, size_t end) {
  for (size_t len = 2; len <= 4 && len <= end; ++len)
    if (utf8CharLength(s.substr(end - len, len)) == len)
      return end - len;
  return end - 1;
}

} // namespace

std::string excerpt(std::string_view s, size_t max) {
  std::string out;
  size_t i = 0;
  for (size_t shown = 0; i < s.size() && shown < max; ++shown)
    i += appendShown(out, s.substr(i), /*keepTab=*/false);
  if (i < s.size())
    out += fmt::format("... ({} bytes)", s.size());
  return out;
}

std::string excerptLine(std::string_view line, size_t at, size_t context) {
  at = std::min(at, line.size());
  size_t from = at;
  for (size_t n = 0; n < context && from > 0; ++n)
    from = charStartBefore(line, from);
  std::string shown = from > 0 ? "..." : "";
  // The part before the caret and the part from it are shown apart, so that no character
  // straddles the caret even where `at` is not on a character boundary.
  for (size_t i = from; i < at;)
    i += appendShown(shown, line.substr(i, at - i), /*keepTab=*/true);
  std::string caret;
  for (char c : shown)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) // one column per character
      caret += c == '\t' ? '\t' : ' ';
  size_t i = at;
  for (size_t n = 0; i < line.size() && n < context; ++n)
    i += appendShown(shown, line.substr(i), /*keepTab=*/true);
  if (i < line.size())
    shown += "...";
  return shown + "\n" + caret + "^";
}

} // namespace kfuse
