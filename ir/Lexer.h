#pragma once
/// The lexer of `.kf` text: splits it into tokens (words, %names, numbers, punctuation and
/// line ends), skipping spaces and `#` comments. Newlines are tokens because a statement is
/// one line. Tokens keep their byte offset; line and column are worked out only when an
/// error needs them, so lexing stays linear however long a line is.
#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

namespace kfuse {

struct SourceLoc {
  size_t offset = 0;    ///< byte offset in the text
  unsigned line = 1;    ///< 1-based
  size_t lineStart = 0; ///< byte offset where the line begins
};

enum class TokKind {
  Word,     ///< [A-Za-z_][A-Za-z0-9_.]*: keywords, ops, dtypes, names, true/false, inf/nan
  Name,     ///< %[A-Za-z0-9_.]+ (text excludes the '%')
  Number,   ///< starts with a digit, '.', or '-': checked by the parser
  Equal,    ///< =
  Comma,    ///< ,
  LBracket, ///< [
  RBracket, ///< ]
  LBrace,   ///< {
  RBrace,   ///< }
  Newline,
  Eof,
  Invalid, ///< a character no token starts with (text is that character)
};

struct Token {
  TokKind kind = TokKind::Eof;
  std::string_view text;
  SourceLoc loc;
};

/// Offset of the first NUL byte or invalid UTF-8 sequence, with the reason: the lexer reads
/// only text that passed this check.
std::optional<std::pair<size_t, const char *>> findNonText(std::string_view s);

/// "'%x'", "end of line", ... for "expected X, got Y" messages.
const char *tokKindName(TokKind k);

class Lexer {
public:
  explicit Lexer(std::string_view text);
  Token next();

private:
  std::string_view text_;
  size_t pos_ = 0;
  unsigned line_ = 1;
  size_t lineStart_ = 0;
};

} // namespace kfuse
