// The check's error bound (ir/ErrorBound.h): error scales op by op, and the shared comparison
// holding a correct large-K feed-forward block within it while catching one wrong element.
#include "ir/ErrorBound.h"
#include "ir/Builder.h"
#include "ir/Interpreter.h"
#include "ir/Random.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "RandomGraph.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <cmath>

using namespace kfuse;

namespace {

std::vector<double> errors(const Graph &g, const std::vector<Tensor> &in) {
  return interpret(*errorGraph(g), in)[0].data;
}

/// A SwiGLU feed-forward block with a residual add, all bf16: x [T, D], gate and up [H, D],
/// down [D, H] (nn.Linear's layout), the down projection summing H terms per element.
std::unique_ptr<Graph> feedForward(int64_t t, int64_t d, int64_t h) {
  auto g = std::make_unique<Graph>("ffn");
  Value x = g->input("x", DType::BF16, {t, d});
  Value wg = g->input("wg", DType::BF16, {h, d});
  Value wu = g->input("wu", DType::BF16, {h, d});
  Value wd = g->input("wd", DType::BF16, {d, h});
  Value gate = g->matmul(x, wg, {.transB = true});
  Value up = g->matmul(x, wu, {.transB = true});
  Value act = g->binary(OpKind::Mul, g->unary(OpKind::Silu, gate).node(), up.node());
  Value down = g->matmul(act, wd, {.transB = true});
  g->output(g->binary(OpKind::Add, x.node(), down.node()));
  return g;
}

std::vector<unsigned> everyNode(const Graph &g) {
  std::vector<unsigned> ids;
  for (const Node *n : g.nodes())
    ids.push_back(n->id());
  return ids;
}

} // namespace

TEST_CASE("errorGraph: a dot product's error scales with the terms it summed", "[check]") {
  Graph g("dot");
  Value a = g.input("a", DType::F32, {1, 2});
  Value b = g.input("b", DType::F32, {2, 1});
  g.output(g.matmul(a, b));
  std::vector<Tensor> in{Tensor(a->type(), {3.0, -3.0}), Tensor(b->type(), {2.0, 2.0})};
  CHECK(interpret(g, in)[0].data == std::vector<double>{0.0});
  // sqrt(2) 2^-23 * (6 + 6), and no rounding of the exact zero.
  CHECK(errors(g, in)[0] == Approx(std::sqrt(2.0) * std::ldexp(12.0, -23)).epsilon(1e-6));
}

TEST_CASE("errorGraph: errors carried through sums, products, exp and roundings", "[check]") {
  Graph g("ops");
  Value x = g.input("x", DType::F32, {2});
  Value h = g.cast(x, DType::BF16); // rounds: 2^-8 |x|
  Value s = g.binary(OpKind::Sub, h.node(), Operand::literal(4)); // carries E(h), rounds again
  g.output(g.unary(OpKind::Exp, s));
  g.output(g.binary(OpKind::Mul, s.node(), h.node()));
  std::vector<Tensor> in{Tensor(x->type(), {4.0, 2.0})};
  std::vector<Tensor> e = interpret(*errorGraph(g), in);
  const double u = std::ldexp(1.0, -8);
  // s = 0 and -2: E(s) = 2^-8 * 4 (+ 0) and 2^-8 * 2 + 2^-8 * 2.
  // exp (bf16 like s): exp(s) E(s) + 2^-8 exp(s)
  CHECK(e[0].data[0] == Approx(4 * u + u).epsilon(1e-6));
  CHECK(e[0].data[1] == Approx(std::exp(-2.0) * (4 * u + u)).epsilon(1e-2));
  // s * h: E(s)|h| + |s|E(h) + 2^-8 |s h|
  CHECK(e[1].data[0] == Approx(4 * u * 4).epsilon(1e-6));
  CHECK(e[1].data[1] == Approx(4 * u * 2 + 2 * 2 * u + 4 * u).epsilon(1e-6));
}

TEST_CASE("checkOutputs: a correct feed-forward block with K = 20000 passes, a flipped "
          "element fails",
          "[check]") {
  std::unique_ptr<Graph> g = feedForward(4, 256, 20000);
  std::vector<Tensor> in = randomInputs(*g, 7);
  // Rounding every intermediate to bf16 (an unfused plan's stores) is as correct as the
  // fused plan, which rounds only the output: the two differ by the rounding of 20000
  // terms per element, while cancellation leaves some elements near zero.
  std::vector<Tensor> got = interpret(*g, in, everyNode(*g));
  std::vector<Tensor> ref = interpret(*g, in);
  CHECK(checkOutputs(*g, in, got, {}) == "");
  // The old bound, tolerance * sqrt(K) / 4 * (1 + |ref|), failed such elements.
  CHECK(compareValues(got[0].data, ref[0].data, Tolerance::of(DType::BF16, std::sqrt(2e4) / 4))
            .find("element") != std::string::npos);
  size_t big = 0;
  for (size_t i = 0; i < ref[0].data.size(); ++i)
    if (std::fabs(ref[0].data[i]) > std::fabs(ref[0].data[big]))
      big = i;
  std::vector<Tensor> wrong = got;
  wrong[0].data[big] = -wrong[0].data[big];
  std::string m = checkOutputs(*g, in, wrong, {});
  INFO("reference " << ref[0].data[big] << ", error scale " << errors(*g, in)[big] << ": " << m);
  CHECK(m.find(fmt::format("element {}:", big)) != std::string::npos);
  CHECK(m.find("its error scale") != std::string::npos);
}

TEST_CASE("checkOutputs: elementwise graphs keep the dtype tolerances", "[check]") {
  Graph g("ew");
  Value x = g.input("x", DType::F32, {3});
  g.output(g.binary(OpKind::Mul, g.unary(OpKind::Tanh, x).node(), Operand::literal(2)));
  std::vector<Tensor> in{Tensor(x->type(), {0.5, -0.25, 1.0})};
  std::vector<Tensor> got = interpret(g, in);
  CHECK(checkOutputs(g, in, got, {}) == "");
  got[0].data[1] += 1e-4; // 1e-5 * (1 + 0.49) allowed
  CHECK(checkOutputs(g, in, got, {}).find("element 1:") != std::string::npos);
  CHECK(checkOutputs(g, in, {}, {}).find("0 outputs") != std::string::npos);
}

TEST_CASE("errorGraph: reductions with keepdims, a layer norm's cancellation widens the bound",
          "[check]") {
  // A layer norm over rows of one element: x - mean(x) is 0 in exact arithmetic, but the
  // kernels' f32 rounding of x (computed twice, once for the mean) leaves up to one unit,
  // which rsqrt(var + 1e-6) multiplies by 1000: the error scale must say so.
  Graph g("ln1");
  Value x = g.input("x", DType::F32, {3, 1});
  Value gx = g.unary(OpKind::Gelu, x);
  Value mu = g.reduce(OpKind::Mean, gx.node(), {-1}, true);
  Value c = g.binary(OpKind::Sub, gx.node(), mu.node());
  Value var = g.reduce(OpKind::Mean, g.binary(OpKind::Mul, c.node(), c.node()).node(), {-1}, true);
  Value r = g.unary(OpKind::Rsqrt, g.binary(OpKind::Add, var.node(), Operand::literal(1e-6)).node());
  g.output(g.binary(OpKind::Mul, c.node(), r.node()));
  // And a softmax, every value of it bounded.
  Value s = g.input("s", DType::F32, {3, 7});
  Value e = g.unary(OpKind::Exp, g.binary(OpKind::Sub, s.node(),
                                          g.reduce(OpKind::Amax, s.node(), {-1}, true).node()).node());
  g.output(g.binary(OpKind::Div, e.node(), g.reduce(OpKind::Sum, e.node(), {-1}, true).node()));
  std::vector<Tensor> in = randomInputs(g, 3);
  std::vector<Tensor> err = interpret(*errorGraph(g), in);
  REQUIRE(err.size() == 2);
  std::vector<Tensor> ref = interpret(g, in);
  for (size_t i = 0; i < 3; ++i) {
    double gelu = std::fabs(interpret(g, in)[0].data[i]); // 0: the exact centred value
    INFO("row " << i << ": output " << gelu << ", error scale " << err[0].data[i]);
    CHECK(err[0].data[i] > 100 * std::ldexp(1.0, -24)); // amplified by 1/sqrt(1e-6)
  }
  for (size_t i = 0; i < err[1].data.size(); ++i) {
    CHECK(std::isfinite(err[1].data[i]));
    CHECK(err[1].data[i] < 1e-5);
  }
}

TEST_CASE("errorGraph: a literal base or numerator (pow(2, x), 1 / x)", "[check]") {
  Graph g("lit");
  Value x = g.input("x", DType::F32, {4});
  Value y = g.unary(OpKind::Exp, x); // an error to carry
  g.output(g.binary(OpKind::Pow, Operand::literal(2.0), y.node()));
  g.output(g.binary(OpKind::Div, Operand::literal(1.0), y.node()));
  std::vector<Tensor> in{Tensor(x->type(), {0.5, -1.0, 0.0, 2.0})};
  std::vector<Tensor> err = interpret(*errorGraph(g), in);
  std::vector<Tensor> ref = interpret(g, in);
  REQUIRE(err.size() == 2);
  for (size_t i = 0; i < 4; ++i) {
    double u = std::ldexp(1.0, -24), ey = u * std::exp(in[0].data[i]);
    INFO("element " << i);
    // pow: |v| |log 2| E(y), plus its own rounding; div: |v| E(y) / |y|, plus its own.
    CHECK(err[0].data[i] == Approx(ref[0].data[i] * std::log(2.0) * ey + u * ref[0].data[i]));
    CHECK(err[1].data[i] == Approx(ref[1].data[i] * ey / std::exp(in[0].data[i]) +
                                   u * ref[1].data[i]));
  }
}

TEST_CASE("errorGraph: every generated graph (reductions, matmuls, unbounded ops) builds, "
          "verifies and holds its own reference", "[check][random]") {
  // The GPU differential checks graphs with reductions against these bounds: an op the
  // builder mishandles must fail here, without a GPU.
  test::RandomGraphOptions o;
  o.reductions = true;
  o.unboundedOps = true;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    auto g = test::randomGraph(seed + 900000, o);
    INFO("seed " << seed << "\n" << printGraph(*g));
    auto e = errorGraph(*g);
    REQUIRE_NOTHROW(verify(*e));
    REQUIRE(e->outputs().size() == g->outputs().size());
    std::vector<Tensor> in = randomInputs(*g, seed);
    std::vector<Tensor> err = interpret(*e, in);
    for (size_t j = 0; j < err.size(); ++j) {
      REQUIRE(err[j].shape() == g->outputs()[j]->shape());
      for (double v : err[j].data)
        REQUIRE(!(v < 0)); // a scale: never negative (NaN or inf where the values overflow)
    }
    CHECK(checkOutputs(*g, in, interpret(*g, in), {}) == "");
  }
}
