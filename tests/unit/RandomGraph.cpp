#include "RandomGraph.h"

#include <fmt/format.h>
#include <random>

namespace kfuse::test {

namespace {

/// No tensor above this many elements, so the interpreter runs thousands of graphs a second.
constexpr int64_t kMaxTensorElements = 6000;

class Generator {
public:
  Generator(uint64_t seed, const RandomGraphOptions &o)
      : rng_(seed * 0x9E3779B97F4A7C15ull + 1), o_(o),
        g_(std::make_unique<Graph>(fmt::format("random{}", seed))) {
    if (o_.dtypes.empty())
      o_.dtypes.assign(std::begin(allDTypes), std::end(allDTypes));
    o_.maxRank = std::max(1, o_.maxRank);
    o_.maxDim = std::max(1, o_.maxDim);
  }

  std::unique_ptr<Graph> build() {
    int rank = pick(1, o_.maxRank);
    for (int i = 0; i < rank; ++i)
      base_.push_back(dim());
    dtype_ = (o_.mixedDTypes || o_.dtypes.size() < 3) ? anyDType() : f32;
    newInput(base_, dtype_);
    if (chance(0.7))
      newInput(broadcastOf(base_), dtype_);
    int ops = pick(o_.minOps, std::max(o_.minOps, o_.maxOps));
    for (int i = 0; i < ops; ++i)
      step();
    // Outputs: the last value and a few others, some of which have users.
    g_->output(pool_.back());
    int extra = pick(0, std::max(0, o_.maxOutputs - 1));
    for (int i = 0; i < extra; ++i) {
      Node *n = pool_[pick(0, int(pool_.size()) - 1)];
      if (!n->isInput() || chance(0.2))
        g_->output(n);
    }
    return std::move(g_);
  }

private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  DType anyDType() { return o_.dtypes[pick(0, int(o_.dtypes.size()) - 1)]; }

  int64_t dim() {
    static const int64_t odd[] = {7, 9, 13, 17};
    if (o_.oddSizes && chance(0.08)) {
      int64_t d = odd[pick(0, 3)];
      if (d <= 3 * o_.maxDim)
        return d;
    }
    return pick(1, o_.maxDim);
  }

  Shape broadcastOf(const Shape &s) {
    Shape r;
    size_t drop = chance(0.5) ? pick(0, int(s.size())) : 0;
    for (size_t i = drop; i < s.size(); ++i)
      r.push_back(chance(0.4) ? 1 : s[i]);
    return r;
  }

  /// A shape that broadcasts with `s` on both sides: where s has 1 it may have a real dim,
  /// where s has a real dim it may have 1, and it may add a leading dim.
  Shape crossOf(const Shape &s) {
    Shape r;
    if (int(s.size()) < o_.maxRank + 1 && chance(0.3))
      r.push_back(dim());
    for (int64_t d : s)
      r.push_back(d == 1 ? dim() : (chance(0.6) ? 1 : d));
    return r;
  }

  Node *newInput(const Shape &s, DType t) {
    Node *n = g_->input(fmt::format("in{}", inputs_++), t, s);
    pool_.push_back(n);
    return n;
  }

  Node *recent() {
    // Prefer recent values: long chains and several consumers both appear.
    int n = int(pool_.size());
    int lo = std::max(0, n - 4);
    return pool_[chance(0.7) ? pick(lo, n - 1) : pick(0, n - 1)];
  }

  Node *push(Value v) {
    pool_.push_back(v.node());
    return v.node();
  }

  double literal() {
    static const double bounded[] = {0.0, 1.0, -1.0, 2.0, 0.5, 3.0, -0.25};
    static const double wild[] = {0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 3.0, -0.25, 1e-30, 1e30, 0.3};
    return o_.unboundedOps ? wild[pick(0, 10)] : bounded[pick(0, 6)];
  }

  OpKind binaryKind() {
    static const OpKind bounded[] = {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Max,
                                     OpKind::Min};
    static const OpKind all[] = {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Max,
                                 OpKind::Min, OpKind::Div, OpKind::Pow};
    return o_.unboundedOps ? all[pick(0, 6)] : bounded[pick(0, 4)];
  }

  OpKind activation() {
    static const OpKind acts[] = {OpKind::Relu, OpKind::Gelu,    OpKind::GeluTanh,
                                  OpKind::Silu, OpKind::Sigmoid, OpKind::Tanh};
    return acts[pick(0, 5)];
  }

  void step() {
    static const OpKind bounded[] = {OpKind::Neg,  OpKind::Abs,  OpKind::Tanh,     OpKind::Sigmoid,
                                     OpKind::Relu, OpKind::Gelu, OpKind::GeluTanh, OpKind::Silu};
    static const OpKind all[] = {OpKind::Neg,  OpKind::Abs,   OpKind::Exp,      OpKind::Log,
                                 OpKind::Sqrt, OpKind::Rsqrt, OpKind::Tanh,     OpKind::Sigmoid,
                                 OpKind::Relu, OpKind::Gelu,  OpKind::GeluTanh, OpKind::Silu};
    int what = pick(0, 99);
    Node *a = recent();
    if (what < 26) {
      push(o_.unboundedOps ? g_->unary(all[pick(0, 11)], a) : g_->unary(bounded[pick(0, 7)], a));
    } else if (what < 34) {
      // Bounded transcendental: exp(tanh(a)), sqrt(abs(a) + 1), log(abs(a) + 1).
      Node *t = chance(0.5) ? Value(g_->unary(OpKind::Tanh, a)).node()
                            : g_->binary(OpKind::Add, Operand(g_->unary(OpKind::Abs, a)),
                                         Operand::literal(1.0))
                                  .node();
      OpKind k =
          t->kind() == OpKind::Tanh ? OpKind::Exp : (chance(0.5) ? OpKind::Sqrt : OpKind::Log);
      if (k == OpKind::Sqrt && chance(0.3))
        k = OpKind::Rsqrt;
      push(g_->unary(k, t));
    } else if (what < 46) {
      Operand lit = Operand::literal(literal());
      OpKind k = chance(0.6) ? (chance(0.5) ? OpKind::Mul : OpKind::Add) : binaryKind();
      bool left = chance(0.3);
      push(left ? g_->binary(k, lit, Operand(a)) : g_->binary(k, Operand(a), lit));
    } else if (what < 64) {
      Node *b = nullptr;
      for (int tries = 0; tries < 8 && !b; ++tries) {
        Node *c = pool_[pick(0, int(pool_.size()) - 1)];
        auto s = broadcastShapes(a->shape(), c->shape());
        if (c->dtype() == a->dtype() && s && numElements(*s) <= kMaxTensorElements)
          b = c;
      }
      if (!b)
        b = newInput(broadcastOf(a->shape()), a->dtype());
      OpKind k = binaryKind();
      push(chance(0.5) ? g_->binary(k, a, b) : g_->binary(k, b, a));
    } else if (what < 70) {
      // Both sides broadcast: [m, 1] op [1, n] -> [m, n].
      Shape s = crossOf(a->shape());
      auto out = broadcastShapes(a->shape(), s);
      Node *b = newInput(
          out && numElements(*out) <= kMaxTensorElements ? s : broadcastOf(a->shape()), a->dtype());
      OpKind k = binaryKind();
      push(chance(0.5) ? g_->binary(k, a, b) : g_->binary(k, b, a));
    } else if (what < 78) {
      DType to = o_.mixedDTypes ? anyDType() : a->dtype();
      push(g_->cast(a, to));
    } else if (o_.matmuls) {
      matmulStep(a);
    } else {
      push(g_->unary(activation(), a));
    }
  }

  /// A matmul on `a` (when it is at least rank 2 and chance says so) or on fresh inputs,
  /// with random transposes and batch dims, then maybe an epilogue.
  void matmulStep(Node *a) {
    MatMulAttrs attrs;
    attrs.transA = chance(0.3);
    attrs.transB = chance(0.5);
    DType t = a->dtype();
    Node *x = nullptr;
    int64_t m, k, n = dim(), batch = 0;
    if (a->shape().size() >= 2 && a->shape().size() <= 3 && chance(0.6)) {
      x = a;
      const Shape &s = a->shape();
      size_t r = s.size();
      k = attrs.transA ? s[r - 2] : s[r - 1];
      m = attrs.transA ? s[r - 1] : s[r - 2];
      if (r == 3)
        batch = s[0];
    } else {
      m = dim();
      k = dim();
      if (o_.batchMatmuls && chance(0.35))
        batch = chance(0.4) ? 1 : pick(2, 3);
      Shape xs = attrs.transA ? Shape{k, m} : Shape{m, k};
      if (batch)
        xs.insert(xs.begin(), batch);
      x = newInput(xs, t);
    }
    Shape ws = attrs.transB ? Shape{n, k} : Shape{k, n};
    if (batch && o_.batchMatmuls && chance(0.5)) {
      // The other side's batch broadcasts against this one: 1 vs B, or B vs 1.
      int64_t wb = batch == 1 ? pick(1, 3) : (chance(0.5) ? 1 : batch);
      ws.insert(ws.begin(), wb);
    }
    Node *w = newInput(ws, t);
    Node *mm = g_->matmul(x, w, attrs);
    Node *v = mm;
    if (chance(0.4))
      pool_.push_back(mm); // the matmul result itself: may get other consumers
    if (!o_.epilogues || chance(0.25)) {
      if (pool_.back() != mm)
        pool_.push_back(mm);
      return;
    }
    const Shape &so = mm->shape();
    int64_t N = so.back(), M = so[so.size() - 2];
    if (chance(0.6)) { // bias: a row [N], a column [M, 1] or a [1, N]
      Shape bs = chance(0.6) ? Shape{N} : (chance(0.5) ? Shape{M, 1} : Shape{1, N});
      Node *b = newInput(bs, t);
      v = chance(0.8) ? g_->binary(OpKind::Add, v, b) : g_->binary(OpKind::Add, b, v);
    }
    if (chance(0.5)) // scale
      v = g_->binary(OpKind::Mul, Operand(v), Operand::literal(chance(0.5) ? 0.25 : -0.5));
    if (chance(0.6))
      v = g_->unary(activation(), v);
    if (chance(0.35)) { // residual: a value of the result's shape, old or new
      Node *r = nullptr;
      for (Node *p : pool_)
        if (p->type() == v->type() && p != mm && chance(0.5))
          r = p;
      if (!r)
        r = newInput(v->shape(), t);
      v = chance(0.7) ? g_->binary(OpKind::Add, v, r) : g_->binary(OpKind::Add, r, v);
    }
    if (o_.mixedDTypes && chance(0.3))
      v = g_->cast(v, anyDType());
    pool_.push_back(v);
  }

  std::mt19937_64 rng_;
  RandomGraphOptions o_;
  std::unique_ptr<Graph> g_;
  Shape base_;
  DType dtype_ = f32;
  std::vector<Node *> pool_;
  int inputs_ = 0;
};

} // namespace

std::unique_ptr<Graph> randomGraph(uint64_t seed, const RandomGraphOptions &opts) {
  return Generator(seed, opts).build();
}

} // namespace kfuse::test
