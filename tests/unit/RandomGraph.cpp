#include "RandomGraph.h"

#include <fmt/format.h>
#include <random>

namespace kfuse::test {

namespace {

class Generator {
public:
  Generator(uint64_t seed, const RandomGraphOptions &o)
      : rng_(seed * 0x9E3779B97F4A7C15ull + 1), o_(o), g_(std::make_unique<Graph>(fmt::format("random{}", seed))) {}

  std::unique_ptr<Graph> build() {
    int rank = pick(1, 3);
    for (int i = 0; i < rank; ++i)
      base_.push_back(pick(1, o_.maxDim));
    dtype_ = o_.mixedDTypes ? allDTypes[pick(0, 2)] : f32;
    newInput(base_, dtype_);
    if (chance(0.7))
      newInput(broadcastOf(base_), dtype_);
    int ops = pick(o_.minOps, o_.maxOps);
    for (int i = 0; i < ops; ++i)
      step();
    // Outputs: the last value and a few others, some of which have users.
    g_->output(pool_.back());
    int extra = pick(0, o_.maxOutputs - 1);
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

  Shape broadcastOf(const Shape &s) {
    Shape r;
    size_t drop = chance(0.5) ? pick(0, int(s.size())) : 0;
    for (size_t i = drop; i < s.size(); ++i)
      r.push_back(chance(0.4) ? 1 : s[i]);
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

  void step() {
    static const OpKind unary[] = {OpKind::Neg,  OpKind::Abs,     OpKind::Tanh,
                                   OpKind::Sigmoid, OpKind::Relu, OpKind::Gelu,
                                   OpKind::GeluTanh, OpKind::Silu};
    static const OpKind binary[] = {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Max,
                                    OpKind::Min};
    int what = pick(0, 99);
    Node *a = recent();
    if (what < 30) {
      pool_.push_back(g_->unary(unary[pick(0, 7)], a));
    } else if (what < 40) {
      // Bounded transcendental: exp(tanh(a)), sqrt(abs(a) + 1), log(abs(a) + 1).
      Node *t = chance(0.5) ? Value(g_->unary(OpKind::Tanh, a)).node()
                            : g_->binary(OpKind::Add, Operand(g_->unary(OpKind::Abs, a)),
                                         Operand::literal(1.0)).node();
      OpKind k = t->kind() == OpKind::Tanh ? OpKind::Exp : (chance(0.5) ? OpKind::Sqrt : OpKind::Log);
      pool_.push_back(g_->unary(k, t));
    } else if (what < 52) {
      static const double lits[] = {0.0, 1.0, -1.0, 2.0, 0.5, 3.0, -0.25};
      Operand lit = Operand::literal(lits[pick(0, 6)]);
      OpKind k = chance(0.6) ? (chance(0.5) ? OpKind::Mul : OpKind::Add) : binary[pick(0, 4)];
      bool left = chance(0.3);
      pool_.push_back(left ? g_->binary(k, lit, Operand(a)) : g_->binary(k, Operand(a), lit));
    } else if (what < 75) {
      Node *b = nullptr;
      for (int tries = 0; tries < 8 && !b; ++tries) {
        Node *c = pool_[pick(0, int(pool_.size()) - 1)];
        if (c->dtype() == a->dtype() && broadcastShapes(a->shape(), c->shape()))
          b = c;
      }
      if (!b)
        b = newInput(broadcastOf(a->shape()), a->dtype());
      OpKind k = binary[pick(0, 4)];
      pool_.push_back(chance(0.5) ? g_->binary(k, a, b) : g_->binary(k, b, a));
    } else if (what < 85) {
      DType to = o_.mixedDTypes ? allDTypes[pick(0, 2)] : a->dtype();
      pool_.push_back(g_->cast(a, to));
    } else if (o_.matmuls && a->shape().size() >= 2) {
      const Shape &s = a->shape();
      MatMulAttrs attrs;
      attrs.transA = chance(0.2);
      attrs.transB = chance(0.5);
      int64_t k = attrs.transA ? s[s.size() - 2] : s[s.size() - 1];
      int64_t n = chance(0.5) ? s[s.size() - 1] : pick(1, o_.maxDim);
      Shape ws = attrs.transB ? Shape{n, k} : Shape{k, n};
      Node *w = newInput(ws, a->dtype());
      Node *m = g_->matmul(a, w, attrs);
      // Scale down so chains of matmuls stay bounded.
      pool_.push_back(chance(0.5) ? g_->binary(OpKind::Mul, Operand(m), Operand::literal(0.25)).node() : m);
    } else if (o_.matmuls) {
      // A matmul on a fresh rank-2 input, broadcast-added to something of its shape later.
      int64_t m = pick(1, o_.maxDim), k = pick(1, o_.maxDim);
      Node *x = newInput(Shape{m, k}, a->dtype());
      Node *w = newInput(Shape{k, base_.back()}, a->dtype());
      pool_.push_back(g_->matmul(x, w));
    } else {
      pool_.push_back(g_->unary(OpKind::Relu, a));
    }
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
