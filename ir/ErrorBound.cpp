#include "ir/ErrorBound.h"

#include "ir/Interpreter.h"
#include "ir/Reduction.h"

#include <cmath>
#include <fmt/format.h>
#include <unordered_map>

namespace kfuse {
namespace {

/// Builds E(n), each value's error scale, for every node of `g` in program order, beside a
/// copy of the values (f32 throughout; a null E is an exact value, an input's).
class ErrorBuilder {
public:
  explicit ErrorBuilder(const Graph &g) : out_(std::make_unique<Graph>(g.name() + ".error")) {}

  std::unique_ptr<Graph> build(const Graph &g) {
    for (const Node *n : g.nodes())
      visit(n);
    for (const Node *o : g.outputs()) {
      Node *e = err_.at(o);
      out_->output(e ? e : absOf(val_.at(o), 0.0)); // an output that is an input: exact
    }
    return std::move(out_);
  }

private:
  std::unique_ptr<Graph> out_;
  std::unordered_map<const Node *, Node *> val_, err_;

  Node *f32(Node *n) { return n->dtype() == DType::F32 ? n : out_->cast(n, DType::F32).node(); }
  /// |n| * c (c = 1: |n|).
  Node *absOf(Node *n, double c = 1.0) {
    Node *a = out_->unary(OpKind::Abs, f32(n));
    return c == 1.0 ? a : out_->binary(OpKind::Mul, a, Operand::literal(c)).node();
  }
  Node *absOf(const Operand &o) { return o.isScalar() ? nullptr : absOf(val_.at(o.node)); }
  Node *errOf(const Operand &o) { return o.isScalar() ? nullptr : err_.at(o.node); }
  double absLiteral(const Operand &o) { return std::fabs(o.scalar); }
  /// a + b, either null (zero).
  Node *plus(Node *a, Node *b) { return !a ? b : !b ? a : out_->binary(OpKind::Add, a, b).node(); }
  Node *times(Node *a, Operand b) { return !a ? nullptr : out_->binary(OpKind::Mul, a, b).node(); }
  /// E(x) * |y| for an operand y, either null (zero).
  Node *timesAbs(Node *e, const Operand &y) {
    if (!e)
      return nullptr;
    return y.isScalar() ? times(e, Operand::literal(absLiteral(y))) : times(e, absOf(y));
  }

  void visit(const Node *n) {
    if (n->isInput()) {
      val_[n] = out_->input(n->name(), n->dtype(), n->shape());
      err_[n] = nullptr; // bound as the reference binds it: exact
      return;
    }
    std::vector<Operand> ops;
    for (const Operand &o : n->operands())
      ops.push_back(o.isScalar() ? o : Operand(val_.at(o.node)));
    Node *v = out_->create(n->kind(), ops, n->attrs());
    val_[n] = v;
    // What the op does to its operands' errors, plus its own rounding to its dtype.
    Node *e = propagated(n, v);
    err_[n] = plus(e, absOf(v, unitRoundoff(n->dtype())));
  }

  Node *propagated(const Node *n, Node *v) {
    const Operand a = n->operand(0);
    Node *ea = errOf(a);
    switch (n->kind()) {
    case OpKind::Add:
    case OpKind::Sub:
      return plus(ea, errOf(n->operand(1)));
    case OpKind::Mul: // E(a) |b| + |a| E(b)
      return plus(timesAbs(ea, n->operand(1)), timesAbs(errOf(n->operand(1)), a));
    case OpKind::Div: { // (E(a) + |a / b| E(b)) / |b|
      const Operand b = n->operand(1);
      // |a / b| is |v|, a node of the error graph already (not one of g's to look up).
      Node *eb = errOf(b);
      Node *num = plus(ea, eb ? times(eb, absOf(v)) : nullptr);
      if (!num)
        return nullptr;
      return b.isScalar() ? times(num, Operand::literal(1.0 / absLiteral(b)))
                          : out_->binary(OpKind::Div, num, absOf(b)).node();
    }
    case OpKind::Max:
    case OpKind::Min: {
      Node *eb = errOf(n->operand(1));
      return !ea ? eb : !eb ? ea : out_->binary(OpKind::Max, ea, eb).node();
    }
    case OpKind::Pow: // |v| (|b| E(a) / |a| + |log |a|| E(b))
      return pow(n, v);
    case OpKind::MatMul:
      return matmul(n);
    case OpKind::Sum:
    case OpKind::Mean:
      return reduction(n);
    case OpKind::Amax:
    case OpKind::Amin:
      return ea ? out_->create(OpKind::Amax, {Operand(ea)}, n->attrs()).node() : nullptr;
    default:
      return unary(n, v, ea);
    }
  }

  /// An elementwise op of one operand: its error times the op's largest slope.
  Node *unary(const Node *n, Node *v, Node *ea) {
    if (!ea)
      return nullptr;
    Node *x = val_.at(n->operand(0).node);
    switch (n->kind()) {
    case OpKind::Exp: // exp'(x) = exp(x)
      return times(ea, absOf(v));
    case OpKind::Log: // 1 / |x|
      return out_->binary(OpKind::Div, ea, absOf(x)).node();
    case OpKind::Sqrt: // 1 / (2 sqrt(x))
      return out_->binary(OpKind::Div, ea, absOf(v, 2.0)).node();
    case OpKind::Rsqrt: // |v|^3 / 2
      return times(times(times(ea, absOf(v, 0.5)), absOf(v)), absOf(v));
    case OpKind::Gelu:
    case OpKind::GeluTanh:
    case OpKind::Silu: // slopes up to 1.13 and 1.10
      return times(ea, Operand::literal(1.2));
    default: // neg, abs, relu, tanh, sigmoid, cast: slopes of at most one
      return ea;
    }
  }

  Node *pow(const Node *n, Node *v) {
    const Operand a = n->operand(0), b = n->operand(1);
    Node *ea = errOf(a), *eb = errOf(b);
    Node *fromA = nullptr, *fromB = nullptr;
    if (ea)
      fromA = out_->binary(OpKind::Div, timesAbs(ea, b), absOf(a)).node();
    if (eb) // |log |a||, a literal for a literal base (pow(2, x))
      fromB = times(
          eb, a.isScalar() ? Operand::literal(std::fabs(std::log(absLiteral(a))))
                           : Operand(out_->unary(OpKind::Abs, out_->unary(OpKind::Log, absOf(a)))));
    Node *sum = plus(fromA, fromB);
    return sum ? times(sum, absOf(v)) : nullptr;
  }

  /// E(A) @ |B| + |A| @ E(B) + gamma_K |A| @ |B|: the operands' errors carried through and
  /// the f32 accumulation's own, which grows like sqrt(K) (rounding errors of random sign).
  Node *matmul(const Node *n) {
    MatMulAttrs at = n->matmulAttrs();
    Node *a = absOf(n->operand(0)), *b = absOf(n->operand(1));
    Node *ea = errOf(n->operand(0)), *eb = errOf(n->operand(1));
    const Shape &sa = n->operand(0).node->shape();
    double k = double(at.transA ? sa[sa.size() - 2] : sa[sa.size() - 1]);
    Node *e = times(out_->matmul(a, b, at), Operand::literal(accumulation(k)));
    if (ea)
      e = plus(e, out_->matmul(ea, b, at));
    if (eb)
      e = plus(e, out_->matmul(a, eb, at));
    return e;
  }

  /// sum and mean: the operand's errors summed (or averaged) and the accumulation's.
  Node *reduction(const Node *n) {
    const Node *in = n->operand(0).node;
    AxisMask mask = reductionMask(n);
    double len = 1;
    for (size_t i = 0; i < in->shape().size(); ++i)
      if (mask[i])
        len *= double(in->shape()[i]);
    Node *e = times(out_->create(n->kind(), {Operand(absOf(val_.at(in)))}, n->attrs()),
                    Operand::literal(accumulation(len)));
    if (Node *ea = err_.at(in))
      e = plus(e, out_->create(n->kind(), {Operand(ea)}, n->attrs()));
    return e;
  }

  static double accumulation(double k) {
    return std::sqrt(std::max(k, 1.0)) * std::ldexp(1.0, -23);
  }
  static double unitRoundoff(DType t) {
    return t == DType::BF16  ? std::ldexp(1.0, -8)
           : t == DType::F16 ? std::ldexp(1.0, -11)
                             : std::ldexp(1.0, -24);
  }
};

} // namespace

std::unique_ptr<Graph> errorGraph(const Graph &g) { return ErrorBuilder(g).build(g); }

std::string checkOutputs(const Graph &g, const std::vector<Tensor> &inputs,
                         const std::vector<Tensor> &got, const std::vector<unsigned> &stored,
                         DType loosest) {
  if (got.size() != g.outputs().size())
    return fmt::format("{} outputs where graph '{}' has {}", got.size(), g.name(),
                       g.outputs().size());
  std::vector<Tensor> ref = interpret(g, inputs, stored);
  std::vector<Tensor> err = interpret(*errorGraph(g), inputs);
  for (size_t j = 0; j < ref.size(); ++j) {
    DType t = coarserDType(ref[j].dtype(), loosest);
    std::string m =
        compareValues(got[j].data, ref[j].data, Tolerance::of(t), err[j].data, kErrorMargin);
    if (!m.empty()) {
      const Node *n = g.outputs()[j];
      return fmt::format("output {} ('{}', {}): {}", j, n->name(), n->type().str(), m);
    }
  }
  return "";
}

} // namespace kfuse
