#include "ir/Lexer.h"

#include "ir/Error.h"

#include <algorithm>

namespace kfuse {

static bool isNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.';
}
static bool isDigit(char c) { return c >= '0' && c <= '9'; }
static bool isAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

std::optional<std::pair<size_t, const char *>> findNonText(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (s[i] == '\0')
      return std::pair{i, "a NUL byte"};
    if (static_cast<unsigned char>(s[i]) < 0x80) { // ASCII, the common case: no call
      ++i;
      continue;
    }
    size_t len = utf8CharLength(s.substr(i));
    if (len == 0)
      return std::pair{i, "invalid UTF-8"};
    i += len;
  }
  return std::nullopt;
}

const char *tokKindName(TokKind k) {
  switch (k) {
  case TokKind::Word:
    return "a word";
  case TokKind::Name:
    return "a %name";
  case TokKind::Number:
    return "a number";
  case TokKind::Equal:
    return "'='";
  case TokKind::Comma:
    return "','";
  case TokKind::LBracket:
    return "'['";
  case TokKind::RBracket:
    return "']'";
  case TokKind::LBrace:
    return "'{'";
  case TokKind::RBrace:
    return "'}'";
  case TokKind::Newline:
    return "end of line";
  case TokKind::Eof:
    return "end of file";
  case TokKind::Invalid:
    return "an invalid character";
  }
  return "a token";
}

Lexer::Lexer(std::string_view text) : text_(text) {
  if (text_.substr(0, 3) == "\xEF\xBB\xBF") // a UTF-8 byte order mark
    pos_ = lineStart_ = 3;
}

Token Lexer::next() {
  const size_t n = text_.size();
  while (pos_ < n) {
    char c = text_[pos_];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++pos_;
    } else if (c == '#') {
      while (pos_ < n && text_[pos_] != '\n')
        ++pos_;
    } else {
      break;
    }
  }
  Token t;
  t.loc = {pos_, line_, lineStart_};
  if (pos_ >= n) {
    t.kind = TokKind::Eof;
    return t;
  }
  size_t start = pos_;
  char c = text_[pos_];
  auto single = [&](TokKind k) {
    t.kind = k;
    t.text = text_.substr(start, 1);
    ++pos_;
    return t;
  };
  switch (c) {
  case '\n': {
    single(TokKind::Newline);
    ++line_;
    lineStart_ = pos_;
    return t;
  }
  case '=':
    return single(TokKind::Equal);
  case ',':
    return single(TokKind::Comma);
  case '[':
    return single(TokKind::LBracket);
  case ']':
    return single(TokKind::RBracket);
  case '{':
    return single(TokKind::LBrace);
  case '}':
    return single(TokKind::RBrace);
  default:
    break;
  }
  if (c == '%') {
    ++pos_;
    while (pos_ < n && isNameChar(text_[pos_]))
      ++pos_;
    t.kind = TokKind::Name;
    t.text = text_.substr(start + 1, pos_ - start - 1);
    return t;
  }
  if (isAlpha(c)) {
    while (pos_ < n && isNameChar(text_[pos_]))
      ++pos_;
    t.kind = TokKind::Word;
    t.text = text_.substr(start, pos_ - start);
    return t;
  }
  if (isDigit(c) || c == '.' || c == '-' || c == '+') {
    // Greedy: everything a literal could be made of, so "1.2.3" or "4x" is one bad token.
    ++pos_;
    while (pos_ < n) {
      char d = text_[pos_];
      char prev = text_[pos_ - 1];
      if (isNameChar(d) || ((d == '-' || d == '+') && (prev == 'e' || prev == 'E')))
        ++pos_;
      else
        break;
    }
    t.kind = TokKind::Number;
    t.text = text_.substr(start, pos_ - start);
    return t;
  }
  // One UTF-8 character (the text was validated before lexing).
  size_t len = 1;
  unsigned char u = static_cast<unsigned char>(c);
  if (u >= 0xF0)
    len = 4;
  else if (u >= 0xE0)
    len = 3;
  else if (u >= 0xC0)
    len = 2;
  len = std::min(len, n - pos_);
  pos_ += len;
  t.kind = TokKind::Invalid;
  t.text = text_.substr(start, len);
  return t;
}

} // namespace kfuse
