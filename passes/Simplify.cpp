// Algebraic simplification, floating-point safe:
//  - identities: x*1, 1*x, x+(-0), (-0)+x, x-(+0), x/1 and a cast to the value's own dtype
//    become x. Not x+(+0) nor x-(-0): for x = -0 they give +0, and 1/x would flip sign;
//  - scalar chains: (x*a)*b -> x*(a*b) and (x+a)+b -> x+(a+b), with the literal on either
//    side, when the inner node has one use and is not a graph output, and the combined
//    literal is finite in f32 (folding must not turn a finite result into Inf or 0);
//  - never x*0 -> 0 (NaN and Inf times 0 are NaN) nor x-x -> 0.
// Ops whose operands are all literals cannot be built in this IR (a binary op needs a
// tensor operand), so there is nothing to fold there.
#include "passes/Pass.h"

#include <cfloat>
#include <cmath>
#include <unordered_set>

namespace kfuse {

namespace {

/// The literal operand of a binary node and the index of its tensor operand, if it has one.
struct LiteralSide {
  unsigned tensor;
  double value;
};
std::optional<LiteralSide> literalSide(const Node *n) {
  if (n->opClass() != OpClass::Binary)
    return std::nullopt;
  if (n->operand(1).isScalar())
    return LiteralSide{0, n->operand(1).scalar};
  if (n->operand(0).isScalar())
    return LiteralSide{1, n->operand(0).scalar};
  return std::nullopt;
}

/// The tensor this node equals, if it is an identity.
Node *identityOf(const Node *n) {
  if (n->kind() == OpKind::Cast)
    return n->operand(0).node->dtype() == n->dtype() ? n->operand(0).node : nullptr;
  auto lit = literalSide(n);
  if (!lit)
    return nullptr;
  Node *x = n->operand(lit->tensor).node;
  if (x->type() != n->type())
    return nullptr;
  switch (n->kind()) {
  case OpKind::Mul:
    return lit->value == 1.0 ? x : nullptr;
  case OpKind::Add:
    return lit->value == 0.0 && std::signbit(lit->value) ? x : nullptr;
  case OpKind::Sub:
    return lit->tensor == 0 && lit->value == 0.0 && !std::signbit(lit->value) ? x : nullptr;
  case OpKind::Div:
    return lit->tensor == 0 && lit->value == 1.0 ? x : nullptr;
  default:
    return nullptr;
  }
}

bool representable(double v) { return std::isfinite(v) && std::fabs(v) <= double(FLT_MAX); }

} // namespace

bool SimplifyPass::run(Graph &g) {
  std::unordered_set<const Node *> outputs(g.outputs().begin(), g.outputs().end());
  bool changed = false;
  std::vector<Node *> order = g.nodes();
  std::vector<Node *> dead;
  for (Node *n : order) {
    if (n->isInput())
      continue;
    if (Node *x = identityOf(n)) {
      bool wasOutput = outputs.count(n);
      g.replaceAllUsesWith(n, x);
      if (wasOutput)
        outputs.insert(x);
      outputs.erase(n);
      dead.push_back(n);
      changed = true;
      continue;
    }
    if (n->kind() != OpKind::Mul && n->kind() != OpKind::Add)
      continue;
    auto outer = literalSide(n);
    if (!outer)
      continue;
    Node *inner = n->operand(outer->tensor).node;
    if (inner->kind() != n->kind() || inner->users().size() != 1 || outputs.count(inner))
      continue;
    auto in = literalSide(inner);
    if (!in)
      continue;
    double a = in->value, b = outer->value;
    double c = n->kind() == OpKind::Mul ? a * b : a + b;
    if (!representable(c))
      continue;
    if (n->kind() == OpKind::Mul && c == 0.0 && a != 0.0 && b != 0.0)
      continue; // underflow: x*a*b may be nonzero
    if (n->kind() == OpKind::Mul && std::fabs(c) < double(FLT_MIN) && c != 0.0)
      continue; // a subnormal factor loses precision
    Node *x = inner->operand(in->tensor).node;
    // add and mul commute: the folded node reads x first, the literal second.
    g.setOperand(n, 0, Operand(x));
    g.setOperand(n, 1, Operand::literal(c));
    dead.push_back(inner);
    changed = true;
    // The folded node may now be an identity (x*0.5*2).
    if (Node *y = identityOf(n)) {
      bool wasOutput = outputs.count(n);
      g.replaceAllUsesWith(n, y);
      if (wasOutput)
        outputs.insert(y);
      outputs.erase(n);
      dead.push_back(n);
    }
  }
  // Erase in reverse discovery order so users go before the nodes they read.
  std::unordered_set<const Node *> finalOutputs(g.outputs().begin(), g.outputs().end());
  for (auto it = dead.rbegin(); it != dead.rend(); ++it) {
    Node *d = *it;
    if (!d->hasUsers() && !finalOutputs.count(d))
      g.erase(d);
  }
  return changed;
}

} // namespace kfuse
