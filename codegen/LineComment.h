#pragma once
/// Comments that tie generated code to the `.kf` text it implements. The text comes from
/// user data (node names), so it is made safe for the end of a line of C before it is
/// written: nothing in it can end the comment, continue it onto the next line or grow the
/// source without bound.
#include <cstddef>
#include <string>
#include <string_view>

namespace kfuse::codegen {

/// Characters of comment text kept before it is cut with "...": a line of generated code
/// stays readable whatever the names in the graph.
inline constexpr size_t kCommentCap = 120;

/// `text` made safe to write after `//` at the end of a line: printable ASCII is kept;
/// every other byte, a backslash (last on a line it would splice the next line into the
/// comment), and the first character of `*/` and `??` (a trigraph may spell a backslash)
/// become \xNN. Text longer than `cap` is cut to end in "...". Reads at most about `cap`
/// bytes of `text`, however long it is.
std::string commentText(std::string_view text, size_t cap = kCommentCap);
/// commentText(text) as a comment to append to a statement (`  // text`), or "" for empty
/// text (a spec built without its graph's text).
std::string lineComment(std::string_view text);

} // namespace kfuse::codegen
