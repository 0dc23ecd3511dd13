#pragma once
/// The printer writes a Graph as `.kf` text: one op per line, SSA names, each op's type as a
/// trailing comment, kernel regions (the fused form) as named blocks. Its output parses back
/// (ir/Parser.h) to the same graph, and printing that again gives the same text, so every
/// pass can be tested as text in, text out.
#include "ir/Graph.h"

#include <llvm/ADT/ArrayRef.h>
#include <string>

namespace kfuse {

/// One `graph NAME { ... }` block ending in a newline. Nodes without a (valid) name are
/// numbered %0, %1, ... in program order, skipping names already in use.
std::string printGraph(const Graph &g);
/// The graphs' blocks separated by a blank line.
std::string printModule(llvm::ArrayRef<const Graph *> graphs);
/// A scalar literal as the parser reads it back to the same double: the shortest form,
/// with `.0` on integral values ("2.0"), and `inf`, `-inf`, `nan`.
std::string formatLiteral(double v);

} // namespace kfuse
