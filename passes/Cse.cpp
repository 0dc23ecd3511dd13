// Common subexpression elimination: two nodes of the same kind with the same operands (the
// same nodes, or literals with the same bits), the same attributes and the same result type
// compute the same tensor, so the later one is replaced by the earlier. One pass in program
// order with a hash table: linear time. add and mul are commutative and match either way.
// A reduction's axes are compared as the set of dims they name (ir/Reduction.h): axes=[-1]
// and axes=[1] of a rank-2 operand, or [0, 1] and [1, 0], reduce the same elements in the
// same order, so they are one value; keepdims still tells two reductions apart.
#include "passes/Pass.h"

#include "ir/Reduction.h"

#include <cstring>
#include <deque>
#include <unordered_map>

namespace kfuse {

namespace {
struct Key {
  OpKind kind;
  DType dtype;
  // The node's whole attribute set (it outlives the table), hashed once: any attribute an
  // op declares tells two nodes apart, not only those CSE knows of.
  const Attrs *attrs;
  size_t attrsHash;
  // Per operand: node pointer or literal bits, and a tag saying which.
  uintptr_t op[2] = {0, 0};
  uint8_t tag[2] = {0, 0};
  unsigned n = 0;
  bool operator==(const Key &o) const {
    return kind == o.kind && dtype == o.dtype && n == o.n && op[0] == o.op[0] && op[1] == o.op[1] &&
           tag[0] == o.tag[0] && tag[1] == o.tag[1] && *attrs == *o.attrs;
  }
};
struct KeyHash {
  size_t operator()(const Key &k) const {
    size_t h = static_cast<size_t>(k.kind) * 0x9E3779B97F4A7C15ull;
    h ^= (static_cast<size_t>(k.dtype) << 8) ^ (k.attrsHash << 12);
    for (unsigned i = 0; i < k.n; ++i)
      h = (h ^ (k.op[i] + k.tag[i])) * 0x100000001B3ull + 0x7F4A7C15;
    return h;
  }
};

/// A reduction's attributes with its axes as the sorted non-negative dims they name.
Attrs canonicalReductionAttrs(const Node *n) {
  AxisMask mask = reductionMask(n);
  IntList axes;
  for (size_t d = 0; d < mask.size(); ++d)
    if (mask[d])
      axes.push_back(static_cast<int64_t>(d));
  Attrs a = n->attrs();
  a.set(Attr::Axes, std::move(axes));
  return a;
}

/// `attrs` is the node's attribute set, or one equivalent to it that outlives the table.
Key makeKey(const Node *n, const Attrs *attrs) {
  Key k{n->kind(), n->dtype(), attrs, attrs->empty() ? 0 : attrs->hash()};
  k.n = n->numOperands();
  for (unsigned i = 0; i < k.n && i < 2; ++i) {
    const Operand &o = n->operand(i);
    if (o.node) {
      k.op[i] = reinterpret_cast<uintptr_t>(o.node);
      k.tag[i] = 1;
    } else {
      uint64_t bits;
      std::memcpy(&bits, &o.scalar, sizeof bits);
      k.op[i] = static_cast<uintptr_t>(bits);
      k.tag[i] = 2;
    }
  }
  if ((n->kind() == OpKind::Add || n->kind() == OpKind::Mul) && k.n == 2 &&
      (k.tag[0] > k.tag[1] || (k.tag[0] == k.tag[1] && k.op[0] > k.op[1]))) {
    std::swap(k.op[0], k.op[1]);
    std::swap(k.tag[0], k.tag[1]);
  }
  return k;
}
} // namespace

bool CsePass::run(Graph &g) {
  std::unordered_map<Key, Node *, KeyHash> seen;
  seen.reserve(g.numNodes() * 2);
  std::vector<Node *> dead;
  std::deque<Attrs> canonical; // stable addresses for the keys' attribute sets
  std::vector<Node *> order = g.nodes();
  for (Node *n : order) {
    if (n->isInput())
      continue;
    const Attrs *attrs = &n->attrs();
    if (n->opClass() == OpClass::Reduction)
      attrs = &canonical.emplace_back(canonicalReductionAttrs(n));
    auto [it, inserted] = seen.try_emplace(makeKey(n, attrs), n);
    if (inserted || it->second->shape() != n->shape())
      continue;
    Node *keep = it->second;
    g.replaceAllUsesWith(n, keep);
    dead.push_back(n);
  }
  for (Node *n : dead)
    g.erase(n);
  return !dead.empty();
}

} // namespace kfuse
