#include "ir/LiteralCheck.h"

#include "ir/Error.h"
#include "ir/Interpreter.h"
#include "ir/Printer.h"

#include <cmath>
#include <fmt/format.h>
#include <memory>
#include <optional>

namespace kfuse {
namespace {

/// The literal operand of `n` that rounds to inf in `t`, if any.
std::optional<double> overflowingLiteral(const Node *n, DType t) {
  if (t == DType::F32)
    return std::nullopt; // the parser refuses literals beyond f32
  for (const Operand &o : n->operands())
    if (o.isScalar() && std::isfinite(o.scalar) &&
        std::isinf(roundToDType(literalValue(o.scalar), t)))
      return o.scalar;
  return std::nullopt;
}

} // namespace

std::vector<std::string> literalOverflowWarnings(const Graph &g) {
  std::vector<std::string> out;
  std::unique_ptr<NodePrinter> print; // one pass over the graph, only when there is a finding
  auto text = [&](const Node *n) {
    if (!print)
      print = std::make_unique<NodePrinter>(g);
    return excerpt((*print)(*n), 200);
  };
  for (const Node *n : g.nodes()) {
    if (std::optional<double> v = overflowingLiteral(n, n->dtype()))
      out.push_back(fmt::format(
          "graph '{}': '{}': the literal {} does not fit {} (largest finite value {}); kernels "
          "compute with it in f32, but results near it become inf when stored as {}",
          excerpt(g.name()), text(n), *v, dtypeName(n->dtype()), largestFinite(n->dtype()),
          dtypeName(n->dtype())));
    else if (n->kind() == OpKind::Cast && !n->operand(0).isScalar())
      if (std::optional<double> w = overflowingLiteral(n->operand(0).node, n->dtype()))
        out.push_back(fmt::format(
            "graph '{}': '{}': its operand '{}' holds the literal {}, which does not fit {} "
            "(largest finite value {}): values near it become inf",
            excerpt(g.name()), text(n), text(n->operand(0).node), *w, dtypeName(n->dtype()),
            largestFinite(n->dtype())));
  }
  return out;
}

} // namespace kfuse
