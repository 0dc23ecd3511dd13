#pragma once
/// The parser reads `.kf` text (see ARCHITECTURE.md) into Graphs, one per `graph NAME { }`
/// block, including the fused form's `kernel NAME { }` regions, and verifies each graph.
/// Bad input of any kind gives one ParseError, "FILE:LINE:COL: error: MESSAGE" followed by
/// the source line and a caret under the column; it never crashes. The parser is a loop
/// over lines, with no recursion, so input size is bounded only by memory.
#include "ir/Error.h"
#include "ir/Graph.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kfuse {

/// A kfuse::Error whose what() is the full diagnostic, ready to print as-is (a tool prints
/// it without a "kfuse CMD: error:" prefix so that the line begins with FILE:LINE:COL).
class ParseError : public Error {
public:
  ParseError(const std::string &diagnostic, std::string file, unsigned line, unsigned column,
             std::string message)
      : Error(diagnostic), file(std::move(file)), line(line), column(column),
        message(std::move(message)) {}
  std::string file;
  unsigned line;       ///< 1-based
  unsigned column;     ///< 1-based, in characters
  std::string message; ///< the MESSAGE part alone
};

/// Parses every `graph NAME { ... }` in the text; throws kfuse::Error whose what() is
/// "FILE:LINE:COL: error: MESSAGE\n<the source line>\n<spaces>^" and verifies each graph.
std::vector<std::unique_ptr<Graph>> parseModule(std::string_view text, std::string_view filename);
/// The largest .kf file parseFile reads (and stdin may hold): 1 GiB.
inline constexpr uint64_t kMaxModuleBytes = uint64_t(1) << 30;
/// Reads the file and parses it; a missing or unreadable file is a kfuse::Error (not a
/// ParseError): "cannot open 'F': REASON". Only a regular file, a pipe or a FIFO is read
/// (ir/InputFile.h, readModuleText): a device such as /dev/zero is refused, and a file over
/// kMaxModuleBytes is refused before it is read.
std::vector<std::unique_ptr<Graph>> parseFile(const std::string &path);
/// The whole text as one attribute value of `type`, as it is written after `name=` in a .kf
/// file ("true", "-2", "[-1, 0]", "bf16"); `name` is the attribute errors name. The inverse
/// of AttrValue::str(). Throws a ParseError at "<value>:1:COL".
AttrValue parseAttrValue(std::string_view text, AttrType type, std::string_view name = "value");
/// The one graph of a text that must hold exactly one (handy in tests).
std::unique_ptr<Graph> parseGraph(std::string_view text, std::string_view filename = "<string>");

} // namespace kfuse
