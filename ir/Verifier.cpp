#include "ir/Verifier.h"

#include "ir/Error.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace kfuse {

static std::string label(const Node *n) {
  return n->name().empty() ? fmt::format("{} (node #{})", opName(n->kind()), n->id())
                           : fmt::format("%{} ({})", n->name(), opName(n->kind()));
}

void verify(const Graph &g) {
  auto bad = [&](const std::string &what) {
    fail("verifier: graph '{}': {}", g.name(), what);
  };
  const std::vector<Node *> &nodes = g.nodes();
  std::unordered_map<const Node *, size_t> position;
  position.reserve(nodes.size() * 2);
  for (size_t i = 0; i < nodes.size(); ++i)
    position[nodes[i]] = i;

  std::unordered_set<std::string_view> names;
  std::unordered_map<const Node *, size_t> useCount;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node *n = nodes[i];
    if (&n->graph() != &g)
      bad(fmt::format("{} belongs to another graph", label(n)));
    if (!n->name().empty() && !names.insert(n->name()).second)
      bad(fmt::format("the name %{} is defined twice", n->name()));
    if (n->isInput()) {
      if (n->name().empty())
        bad(fmt::format("input node #{} has no name", n->id()));
      if (std::find(g.inputs().begin(), g.inputs().end(), n) == g.inputs().end())
        bad(fmt::format("{} is not in the input list", label(n)));
      if (n->numOperands() != 0)
        bad(fmt::format("{} has operands", label(n)));
      if (n->kernel() >= 0)
        bad(fmt::format("{} is inside kernel region", label(n)));
      continue;
    }
    for (const Operand &o : n->operands()) {
      if (!o.node)
        continue;
      auto it = position.find(o.node);
      if (it == position.end())
        bad(fmt::format("{} uses a node that is not in the graph", label(n)));
      if (it->second >= i)
        bad(fmt::format("{} uses {} before it is defined", label(n), label(o.node)));
      ++useCount[o.node];
      if (std::count(o.node->users().begin(), o.node->users().end(), n) == 0)
        bad(fmt::format("{} is missing from the users of {}", label(n), label(o.node)));
    }
    TensorType expect;
    try {
      expect = Graph::inferType(n->kind(), n->operands(), n->matmulAttrs(), n->dtype());
    } catch (const Error &e) {
      bad(fmt::format("{} is ill-typed: {}", label(n), e.what()));
    }
    if (!(expect == n->type()))
      bad(fmt::format("{} has type {} but its operands give {}", label(n), n->type().str(),
                      expect.str()));
  }
  for (const Node *n : nodes)
    if (n->users().size() != useCount[n])
      bad(fmt::format("{} lists {} users but has {} uses", label(n), n->users().size(),
                      useCount[n]));
  for (const Node *in : g.inputs())
    if (!position.count(in))
      bad(fmt::format("input %{} is not live", in->name()));
  if (g.outputs().empty())
    bad("it has no outputs");
  for (const Node *o : g.outputs())
    if (!position.count(o))
      bad(fmt::format("output {} is not live", label(o)));

  // Kernel regions: contiguous runs in program order; each kernel appears in one run.
  int numKernels = static_cast<int>(g.kernelNames().size());
  std::vector<bool> seen(numKernels, false);
  int current = -1;
  for (const Node *n : nodes) {
    int k = n->kernel();
    if (k >= numKernels)
      bad(fmt::format("{} is in kernel {} of {}", label(n), k, numKernels));
    if (k != current && k >= 0) {
      if (seen[k])
        bad(fmt::format("kernel '{}' is not contiguous in program order ({} is apart from the "
                        "rest)",
                        g.kernelNames()[k], label(n)));
      seen[k] = true;
    }
    current = k;
  }
  for (int k = 0; k < numKernels; ++k)
    if (!seen[k])
      bad(fmt::format("kernel '{}' is empty", g.kernelNames()[k]));
}

} // namespace kfuse
