#pragma once
/// The printer writes a Graph as `.kf` text: one op per line, SSA names, each op's type as a
/// trailing comment, kernel regions (the fused form) as named blocks. Its output parses back
/// (ir/Parser.h) to the same graph, and printing that again gives the same text, so every
/// pass can be tested as text in, text out.
#include "ir/Graph.h"

#include <llvm/ADT/ArrayRef.h>
#include <memory>
#include <string>

namespace kfuse {

/// One `graph NAME { ... }` block ending in a newline. Nodes without a (valid) name are
/// numbered %0, %1, ... in program order, skipping names already in use.
std::string printGraph(const Graph &g);
/// The graphs' blocks separated by a blank line.
std::string printModule(llvm::ArrayRef<const Graph *> graphs);
/// Prints the nodes of one graph one at a time, each as printGraph writes it, for text that
/// points back at the graph (the comments in generated code): `%hb = add %h, %b` with its
/// attributes, but no indentation, type comment or newline; an input as `%x = input
/// bf16[64, 4096]`. Names are the ones printGraph gives the whole graph, so making the
/// printer costs one pass over the graph: make one per graph, not one per node.
class NodePrinter {
public:
  explicit NodePrinter(const Graph &g);
  ~NodePrinter();
  NodePrinter(const NodePrinter &) = delete;
  NodePrinter &operator=(const NodePrinter &) = delete;
  /// The node's name as printed, without its `%`.
  const std::string &name(const Node *n) const;
  /// Appends the node's line (see above) to `out`.
  void append(std::string &out, const Node &n) const;
  std::string operator()(const Node &n) const;

private:
  class Namer;
  std::unique_ptr<Namer> namer_;
};

/// A scalar literal as the parser reads it back to the same double: the shortest form,
/// with `.0` on integral values ("2.0"), and `inf`, `-inf`, `nan`.
std::string formatLiteral(double v);

} // namespace kfuse
