// Dead code elimination: removes every node with no users that is not a graph output;
// inputs always stay. A worklist makes it linear in the graph's size.
#include "passes/Pass.h"

#include <unordered_set>

namespace kfuse {

bool DcePass::run(Graph &g) {
  std::unordered_set<const Node *> outputs(g.outputs().begin(), g.outputs().end());
  std::vector<Node *> work;
  for (Node *n : g.nodes())
    if (!n->isInput() && !n->hasUsers() && !outputs.count(n))
      work.push_back(n);
  bool changed = false;
  while (!work.empty()) {
    Node *n = work.back();
    work.pop_back();
    llvm::SmallVector<Node *, 2> ops;
    for (const Operand &o : n->operands())
      if (o.node)
        ops.push_back(o.node);
    g.erase(n);
    changed = true;
    for (Node *o : ops)
      if (!o->isInput() && !o->hasUsers() && !outputs.count(o))
        work.push_back(o);
  }
  return changed;
}

} // namespace kfuse
