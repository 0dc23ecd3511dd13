#include "ir/Verifier.h"

#include "ir/Error.h"
#include "ir/KernelRegion.h"

#include <algorithm>
#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/DenseSet.h>
#include <llvm/ADT/StringRef.h>
#include <vector>

namespace kfuse {

// Names are quoted through excerpt(): a parsed graph's names are as long as its file
// makes them, and the builder API takes any bytes.
static std::string label(const Node *n) {
  return n->name().empty() ? fmt::format("{} (node #{})", opName(n->kind()), n->id())
                           : fmt::format("%{} ({})", excerpt(n->name()), opName(n->kind()));
}

/// Kernel regions: contiguous runs in program order, each kernel in one run, and each run
/// a kernel codegen can generate (ir/KernelRegion.h, the rule fusion and codegen ask too).
static void verifyKernels(const Graph &g, const std::vector<Node *> &nodes) {
  auto bad = [&](const std::string &what) {
    fail("verifier: graph '{}': {}", excerpt(g.name()), what);
  };
  int numKernels = static_cast<int>(g.kernelNames().size());
  std::vector<bool> seen(numKernels, false);
  std::vector<const Node *> run;
  auto checkRun = [&] {
    if (run.empty())
      return;
    if (FusionDecision d = classifyRegion(run); !d)
      bad(fmt::format("kernel '{}' cannot be one kernel: {}",
                      excerpt(g.kernelNames()[run[0]->kernel()]), d.explain()));
    run.clear();
  };
  int current = -1;
  for (const Node *n : nodes) {
    int k = n->kernel();
    if (k >= numKernels)
      bad(fmt::format("{} is in kernel {} of {}", label(n), k, numKernels));
    if (k != current) {
      checkRun();
      if (k >= 0 && seen[k])
        bad(fmt::format("kernel '{}' is not contiguous in program order ({} is apart from the "
                        "rest)",
                        excerpt(g.kernelNames()[k]), label(n)));
      if (k >= 0)
        seen[k] = true;
    }
    if (k >= 0)
      run.push_back(n);
    current = k;
  }
  checkRun();
  for (int k = 0; k < numKernels; ++k)
    if (!seen[k])
      bad(fmt::format("kernel '{}' is empty", excerpt(g.kernelNames()[k])));
}

void verify(const Graph &g) {
  auto bad = [&](const std::string &what) {
    fail("verifier: graph '{}': {}", excerpt(g.name()), what);
  };
  const std::vector<Node *> &nodes = g.nodes();
  // Position and use count by node id (ids are unique within a graph): flat arrays keep
  // verifying a 200,000-node graph to a few milliseconds.
  constexpr size_t kAbsent = ~size_t(0);
  unsigned maxId = 0;
  for (const Node *n : nodes)
    maxId = std::max(maxId, n->id());
  std::vector<size_t> positionById(nodes.empty() ? 0 : maxId + 1, kAbsent);
  std::vector<size_t> useCountById(positionById.size(), 0);
  auto positionOf = [&](const Node *n) {
    return &n->graph() == &g && n->id() < positionById.size() ? positionById[n->id()] : kAbsent;
  };
  for (size_t i = 0; i < nodes.size(); ++i)
    if (&nodes[i]->graph() == &g)
      positionById[nodes[i]->id()] = i;

  // Whether `user` is in the use list of `used`: a scan for short lists, a set built once
  // for long ones (one input read by 100k ops made a scan per use O(users^2)).
  llvm::DenseMap<const Node *, llvm::DenseSet<const Node *>> longUseLists;
  auto isUser = [&](const Node *used, const Node *user) {
    llvm::ArrayRef<Node *> us = used->users();
    if (us.size() <= 16)
      return std::find(us.begin(), us.end(), user) != us.end();
    auto [it, inserted] = longUseLists.try_emplace(used);
    if (inserted)
      it->second.insert(us.begin(), us.end());
    return it->second.contains(user);
  };
  llvm::DenseSet<const Node *> inputSet(g.inputs().begin(), g.inputs().end());

  llvm::DenseSet<llvm::StringRef> names;
  names.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node *n = nodes[i];
    if (&n->graph() != &g)
      bad(fmt::format("{} belongs to another graph", label(n)));
    if (!n->name().empty() && !names.insert(n->name()).second)
      bad(fmt::format("the name %{} is defined twice", excerpt(n->name())));
    if (n->isInput()) {
      if (n->name().empty())
        bad(fmt::format("input node #{} has no name", n->id()));
      if (!inputSet.contains(n))
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
      size_t pos = positionOf(o.node);
      if (pos == kAbsent)
        bad(fmt::format("{} uses a node that is not in the graph", label(n)));
      if (pos >= i)
        bad(fmt::format("{} uses {} before it is defined", label(n), label(o.node)));
      ++useCountById[o.node->id()];
      if (!isUser(o.node, n))
        bad(fmt::format("{} is missing from the users of {}", label(n), label(o.node)));
    }
    TensorType expect;
    try {
      expect = Graph::inferType(n->kind(), n->operands(), n->attrs());
    } catch (const Error &e) {
      bad(fmt::format("{} is ill-typed: {}", label(n), e.what()));
    }
    if (!(expect == n->type()))
      bad(fmt::format("{} has type {} but its operands give {}", label(n), n->type().str(),
                      expect.str()));
  }
  for (const Node *n : nodes)
    if (n->users().size() != useCountById[n->id()])
      bad(fmt::format("{} lists {} users but has {} uses", label(n), n->users().size(),
                      useCountById[n->id()]));
  for (const Node *in : g.inputs())
    if (positionOf(in) == kAbsent)
      bad(fmt::format("input %{} is not live", excerpt(in->name())));
  if (g.outputs().empty())
    bad("it has no outputs");
  for (const Node *o : g.outputs())
    if (positionOf(o) == kAbsent)
      bad(fmt::format("output {} is not live", label(o)));

  verifyKernels(g, nodes);
}

} // namespace kfuse
