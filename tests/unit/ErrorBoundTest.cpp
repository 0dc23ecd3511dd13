// The check's error bound (ir/ErrorBound.h): error scales op by op, and the shared comparison
// holding a correct large-K feed-forward block within it while catching one wrong element.
#include "ir/ErrorBound.h"
#include "ir/Builder.h"
#include "ir/Interpreter.h"
#include "ir/Random.h"

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
