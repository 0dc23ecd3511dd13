#include "RandomGraph.h"

#include <fmt/format.h>
#include <algorithm>
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
    // Only with reductions on: the random stream (and so every graph) stays as it was without.
    if (o_.reductions && a->shape().size() >= 1 && chance(0.22)) {
      reductionStep(a);
      return;
    }
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

  OpKind reductionKind() {
    static const OpKind kinds[] = {OpKind::Sum, OpKind::Mean, OpKind::Amax, OpKind::Amin};
    return kinds[pick(0, 3)];
  }

  /// Random axes of a rank-`rank` value: often the last axis (as -1 or rank-1), else a
  /// random non-empty subset, written with negative axes now and then, in random order.
  IntList randomAxes(int rank) {
    if (chance(0.5))
      return {chance(0.7) ? -1 : int64_t(rank - 1)};
    IntList axes;
    for (int d = 0; d < rank; ++d)
      if (chance(0.4))
        axes.push_back(chance(0.3) ? d - rank : d);
    if (axes.empty())
      axes.push_back(pick(0, rank - 1));
    std::shuffle(axes.begin(), axes.end(), rng_);
    return axes;
  }

  /// The elements one reduction of `a` over `axes` adds up.
  static int64_t reducedCount(const Node *a, const IntList &axes) {
    int64_t n = 1, rank = int64_t(a->shape().size());
    for (int64_t ax : axes)
      n *= a->shape()[ax < 0 ? ax + rank : ax];
    return n;
  }

  /// Replaces one of `axes` by a dim of `a` it does not name that has the same size, so the
  /// reduction has the same shape over other elements; false when there is none.
  static bool swapEqualAxis(const Node *a, IntList &axes) {
    const Shape &s = a->shape();
    int64_t rank = int64_t(s.size());
    for (int64_t &ax : axes) {
      int64_t d = ax < 0 ? ax + rank : ax;
      for (int64_t e = 0; e < rank; ++e) {
        bool named = false;
        for (int64_t o : axes)
          named |= (o < 0 ? o + rank : o) == e;
        if (!named && s[e] == s[d]) {
          ax = e;
          return true;
        }
      }
    }
    return false;
  }

  /// A reduction of `a`, alone or in a model's pattern.
  void reductionStep(Node *a) {
    int rank = int(a->shape().size());
    int what = pick(0, 99);
    double eps = chance(0.5) ? 1e-5 : 1e-6;
    if (what < 25) {
      // Plain: any op over random axes; sum only over a few hundred elements at most.
      IntList axes = randomAxes(rank);
      OpKind k = reductionKind();
      if (k == OpKind::Sum && reducedCount(a, axes) > 256)
        k = OpKind::Mean;
      bool keep = chance(0.5);
      Value r = g_->reduce(k, a, axes, keep);
      push(r);
      if (chance(0.4)) // a consumer that broadcasts it back (or just uses it)
        binaryWith(a, r);
      if (chance(0.35)) {
        // A sibling of the same operand: the same axes written another way (one value for
        // cse), or other axes that may give the same shape (two values), joined to r.
        IntList other = axes;
        if (chance(0.5))
          for (int64_t &ax : other)
            ax = ax < 0 ? ax + rank : ax - rank;
        else if (!swapEqualAxis(a, other))
          other = randomAxes(rank);
        OpKind k2 = chance(0.7) ? k : reductionKind();
        if (k2 == OpKind::Sum && reducedCount(a, other) > 256)
          k2 = OpKind::Mean;
        Value r2 = g_->reduce(k2, a, other, chance(0.8) ? keep : !keep);
        push(r2);
        // Mostly an output: a wrong merge of the two must show in the results.
        if (Node *j = binaryWith(r, r2); j && chance(0.7))
          g_->output(j);
      }
    } else if (what < 45) {
      // Centre on a row's max or mean (or a column's, over axis 0): x - amax(x), x - mean(x).
      int64_t axis = rank >= 2 && chance(0.3) ? 0 : -1;
      OpKind k = chance(0.5) ? OpKind::Amax : (chance(0.5) ? OpKind::Mean : OpKind::Amin);
      Value m = g_->reduce(k, a, {axis}, true);
      push(m);
      push(g_->binary(OpKind::Sub, Operand(a), Operand(m)));
    } else if (what < 65) {
      // softmax over the last axis (or axis 0): every exp is <= 1 and the sum is >= 1.
      int64_t axis = rank >= 2 && chance(0.2) ? 0 : -1;
      Value m = g_->reduce(OpKind::Amax, a, {axis}, true);
      Value e = g_->unary(OpKind::Exp, g_->binary(OpKind::Sub, Operand(a), Operand(m)));
      Value s = g_->reduce(OpKind::Sum, e, {axis}, true);
      if (chance(0.3))
        push(s);
      push(g_->binary(OpKind::Div, Operand(e), Operand(s)));
    } else if (what < 85) {
      // rms norm (x * rsqrt(mean(x*x) + eps)), often scaled by a weight of the last dim.
      Value sq = g_->binary(OpKind::Mul, Operand(a), Operand(a));
      Value v = g_->reduce(OpKind::Mean, sq, {-1}, true);
      Value r =
          g_->unary(OpKind::Rsqrt, g_->binary(OpKind::Add, Operand(v), Operand::literal(eps)));
      Value y = g_->binary(OpKind::Mul, Operand(a), Operand(r));
      if (chance(0.6))
        y = g_->binary(OpKind::Mul, Operand(newInput({a->shape().back()}, a->dtype())),
                       Operand(y));
      push(y);
    } else {
      // layer norm: d = x - mean(x); d * rsqrt(mean(d*d) + eps) (+ a bias).
      Value mu = g_->reduce(OpKind::Mean, a, {-1}, true);
      Value d = g_->binary(OpKind::Sub, Operand(a), Operand(mu));
      Value var = g_->reduce(OpKind::Mean, g_->binary(OpKind::Mul, Operand(d), Operand(d)), {-1},
                             true);
      Value y = g_->binary(
          OpKind::Mul, Operand(d),
          Operand(g_->unary(OpKind::Rsqrt,
                            g_->binary(OpKind::Add, Operand(var), Operand::literal(eps)))));
      if (chance(0.5))
        y = g_->binary(OpKind::Add, Operand(y),
                       Operand(newInput({a->shape().back()}, a->dtype())));
      push(y);
    }
  }

  /// A bounded binary op of `a` and `r` when their shapes broadcast (r a reduction of a), or
  /// null.
  Node *binaryWith(Node *a, Node *r) {
    auto s = broadcastShapes(a->shape(), r->shape());
    if (!s || numElements(*s) > kMaxTensorElements || a->dtype() != r->dtype())
      return nullptr;
    static const OpKind kinds[] = {OpKind::Sub, OpKind::Add, OpKind::Mul, OpKind::Max};
    OpKind k = kinds[pick(0, 3)];
    return push(chance(0.8) ? g_->binary(k, a, r) : g_->binary(k, r, a));
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
