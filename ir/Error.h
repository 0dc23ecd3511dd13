#pragma once
/// kfuse::Error is the one exception a user sees: one sentence that names the op, the
/// shapes or dtypes, or the file position that caused it. Internal invariants use assert.
///
/// Input text quoted in such a sentence (a token, a name, a source line, a path, a file's
/// header) goes through excerpt() or excerptLine(): the one rule for how much of it is
/// shown and how bytes a terminal would act on are written.
#include <fmt/format.h>
#include <stdexcept>
#include <string>
#include <string_view>

namespace kfuse {

class Error : public std::runtime_error {
public:
  explicit Error(const std::string &msg) : std::runtime_error(msg) {}
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args &&...args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

/// The length in bytes (1 to 4) of the UTF-8 character `s` starts with, or 0 where `s` is
/// empty or does not start with valid UTF-8: a stray continuation byte, a sequence cut
/// short, an overlong form, a surrogate or a code point past U+10FFFF. NUL is a character.
size_t utf8CharLength(std::string_view s);

/// `s` fit to quote in a message: at most `max` characters of it (a UTF-8 character or a
/// byte that is not part of one each), then "... (N bytes)" when it was longer, so a 10 MB
/// token gives a short message; and control characters (tab, ESC, NUL, ...), DEL and bytes
/// that are not valid UTF-8 written as \xNN, so printing the message cannot drive the
/// terminal or leave it undecodable.
std::string excerpt(std::string_view s, size_t max = 200);

/// A source line under a message, and a caret under the character at byte `at` of it (at
/// may be line.size(), the line's end): characters are shown as excerpt() shows them, but
/// tabs stay tabs, repeated in the caret line so the caret lines up; a long line shows at
/// most `context` characters either side of the caret, with "..." where it was cut.
/// Returns "LINE\nCARET", the caret line ending in '^'.
std::string excerptLine(std::string_view line, size_t at, size_t context = 60);

} // namespace kfuse
