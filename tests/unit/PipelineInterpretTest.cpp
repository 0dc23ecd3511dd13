// Differential test of the passes against the reference interpreter (analysis/Differential.h)
// on generated graphs (tests/unit/RandomGraph.h), on every CI run:
//  - 2,000 graphs with every feature of the generator (broadcasts, several consumers and
//    outputs, matmuls with epilogues, all dtypes) through the -O2 pipeline one pass at a
//    time, verified after each: cse, dce and fuse keep every output bit, simplify stays
//    within roundingTolerance of the loosest dtype;
//  - 3,000 larger graphs (up to 40 ops, rank 4, dims up to 9, five outputs), the same way;
//  - 3,000 graphs with reductions (sum/mean/amax/amin, softmax and norm patterns) through
//    the whole pipeline the same way, fuse included;
//  - 600 graphs with unbounded ops (div, pow, raw exp/log/sqrt/rsqrt: NaN, Inf and -0 appear)
//    through the whole pipeline, every pass bit for bit except simplify's rounding.
// A failing graph is shrunk (tests/unit/Shrink.h) and saved as a .kf reproducer whose path
// the failure message names. The figures are printed (graphs, ops, elements, mismatches).
#include "RandomGraph.h"
#include "Shrink.h"

#include "ir/Interpreter.h"
#include "ir/Printer.h"
#include "ir/Random.h"
#include "analysis/Differential.h"
#include "passes/PassManager.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fmt/format.h>
#include <map>

using namespace kfuse;

namespace {

struct Figures {
  size_t graphs = 0, ops = 0, elements = 0, mismatches = 0, specials = 0;
  double maxRounding = 0;
  std::vector<std::string> failures;
};

size_t countOps(const Graph &g) {
  size_t n = 0;
  for (const Node *x : g.nodes())
    n += !x->isInput();
  return n;
}

/// Checks one graph; on a mismatch shrinks it, saves the reproducer and records the message.
void checkOne(const Graph &g, uint64_t seed, const std::vector<std::string> &passes, Figures &f,
              const char *tag) {
  std::vector<Tensor> inputs = randomInputs(g, seed);
  PipelineCheck c = checkPipeline(g, inputs, passes);
  ++f.graphs;
  f.ops += countOps(g);
  f.elements += c.elementsCompared;
  f.maxRounding = std::max(f.maxRounding, c.maxRoundingError);
  if (c.failure.empty())
    return;
  ++f.mismatches;
  auto still = [&](const Graph &h) {
    return !checkPipeline(h, randomInputs(h, seed), passes).failure.empty();
  };
  test::ShrinkResult s = test::shrinkGraph(g, still);
  std::string name = fmt::format("pipeline-{}-{}", tag, seed);
  std::string path = test::saveReproducer(
      *s.graph, name, fmt::format("{} (seed {}, inputs --random {})", c.failure, seed, seed),
      test::reproducerDir(KFUSE_BIN_DIR "/../repro"));
  f.failures.push_back(fmt::format("{} seed {}: {}\n  shrunk to {} nodes, saved as {}:\n{}", tag,
                                   seed, c.failure, s.graph->numNodes(), path,
                                   printGraph(*s.graph)));
}

size_t specialCount(const Graph &g, uint64_t seed) {
  size_t n = 0;
  for (const Tensor &t : interpret(g, randomInputs(g, seed)))
    for (double v : t.data)
      n += !std::isfinite(v) || (v == 0 && std::signbit(v));
  return n;
}

} // namespace

TEST_CASE("differential: 2,000 generated graphs through -O2, pass by pass, against the "
          "interpreter",
          "[random][interpret][differential]") {
  auto t0 = std::chrono::steady_clock::now();
  Figures f;
  size_t matmuls = 0, multiOut = 0, reduced = 0;
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    auto g = test::randomGraph(seed);
    for (const Node *n : g->nodes())
      matmuls += n->kind() == OpKind::MatMul;
    multiOut += g->outputs().size() > 1;
    for (const Node *n : g->inputs())
      reduced += n->type().dtype != DType::F32;
    checkOne(*g, seed, defaultPipeline(), f, "o2");
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("differential -O2: %zu graphs, %zu ops (%zu matmuls), %zu graphs with several "
              "outputs, %zu 16-bit inputs, %zu output elements compared, %zu mismatches, "
              "largest simplify rounding error %.3g, %.2f s\n",
              f.graphs, f.ops, matmuls, multiOut, reduced, f.elements, f.mismatches, f.maxRounding,
              secs);
  for (const std::string &m : f.failures)
    UNSCOPED_INFO(m);
  CHECK(f.graphs == 2000);
  CHECK(matmuls > 1000);
  CHECK(multiOut > 500);
  CHECK(f.mismatches == 0);
}

TEST_CASE("differential: 3,000 larger generated graphs (up to 40 ops, dims up to 9, rank 4)",
          "[random][interpret][differential]") {
  auto t0 = std::chrono::steady_clock::now();
  test::RandomGraphOptions o;
  o.maxOps = 40;
  o.maxDim = 9;
  o.maxRank = 4;
  o.maxOutputs = 5;
  Figures f;
  for (uint64_t seed = 0; seed < 3000; ++seed)
    checkOne(*test::randomGraph(seed + 200000, o), seed, defaultPipeline(), f, "large");
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("differential larger graphs: %zu graphs, %zu ops, %zu output elements compared, "
              "%zu mismatches, largest simplify rounding error %.3g, %.2f s\n",
              f.graphs, f.ops, f.elements, f.mismatches, f.maxRounding, secs);
  for (const std::string &m : f.failures)
    UNSCOPED_INFO(m);
  CHECK(f.graphs == 3000);
  CHECK(f.mismatches == 0);
}

TEST_CASE("differential: 600 graphs with NaN/Inf/-0 producing ops keep their bits",
          "[random][interpret][differential]") {
  auto t0 = std::chrono::steady_clock::now();
  test::RandomGraphOptions o;
  o.unboundedOps = true;
  Figures f;
  for (uint64_t seed = 0; seed < 600; ++seed) {
    auto g = test::randomGraph(seed + 100000, o);
    f.specials += specialCount(*g, seed);
    checkOne(*g, seed, defaultPipeline(), f, "wild");
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("differential unbounded ops: %zu graphs, %zu ops, %zu output elements compared, "
              "%zu NaN/Inf/-0 outputs, %zu mismatches, %.2f s\n",
              f.graphs, f.ops, f.elements, f.specials, f.mismatches, secs);
  for (const std::string &m : f.failures)
    UNSCOPED_INFO(m);
  CHECK(f.specials > 1000); // the special values really are exercised
  CHECK(f.mismatches == 0);
}

TEST_CASE("differential: 3,000 generated graphs with reductions through the passes, one by one",
          "[random][interpret][differential][reduce]") {
  // Reductions over random axes, keepdims or not, and the softmax / norm patterns around them
  // (RandomGraphOptions::reductions), half of them in larger graphs (rank up to 4).
  // The whole -O2 pipeline, fuse included: reductions join kernels (ir/KernelRegion.h).
  const std::vector<std::string> passes = defaultPipeline();
  auto t0 = std::chrono::steady_clock::now();
  Figures f;
  std::map<OpKind, size_t> kinds;
  size_t withReduction = 0, keepdims = 0, lastAxis = 0, broadcastBack = 0;
  for (uint64_t seed = 0; seed < 3000; ++seed) {
    test::RandomGraphOptions o;
    o.reductions = true;
    if (seed % 2) {
      o.maxOps = 30;
      o.maxDim = 9;
      o.maxRank = 4;
      o.maxOutputs = 4;
    }
    auto g = test::randomGraph(seed + 300000, o);
    bool any = false;
    for (const Node *n : g->nodes()) {
      if (n->opClass() != OpClass::Reduction)
        continue;
      any = true;
      ++kinds[n->kind()];
      keepdims += n->attrs().getBool(Attr::Keepdims);
      const IntList &axes = n->attrs().getInts(Attr::Axes);
      int64_t rank = int64_t(n->operand(0).node->shape().size());
      lastAxis += axes.size() == 1 && (axes[0] == -1 || axes[0] == rank - 1);
      for (const Node *u : n->users())
        broadcastBack += u->opClass() == OpClass::Binary && u->shape() != n->shape();
    }
    withReduction += any;
    checkOne(*g, seed, passes, f, "reduce");
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("differential reductions: %zu graphs (%zu with a reduction), %zu ops, reductions: "
              "%zu sum, %zu mean, %zu amax, %zu amin (%zu keepdims, %zu over the last axis alone, "
              "%zu uses broadcast back), %zu output elements compared, %zu mismatches, largest "
              "simplify rounding error %.3g, %.2f s\n",
              f.graphs, withReduction, f.ops, kinds[OpKind::Sum], kinds[OpKind::Mean],
              kinds[OpKind::Amax], kinds[OpKind::Amin], keepdims, lastAxis, broadcastBack,
              f.elements, f.mismatches, f.maxRounding, secs);
  for (const std::string &m : f.failures)
    UNSCOPED_INFO(m);
  CHECK(f.graphs == 3000);
  CHECK(withReduction > 2000);
  for (OpKind k : {OpKind::Sum, OpKind::Mean, OpKind::Amax, OpKind::Amin})
    CHECK(kinds[k] > 300);
  CHECK(keepdims > 1000);
  CHECK(broadcastBack > 1000);
  CHECK(f.mismatches == 0);
}

TEST_CASE("differential comparison: bitwise and rounding agreements", "[differential]") {
  TensorType t{DType::F32, {3}};
  Tensor a(t, {1.0, -0.0, NAN}), b(t, {1.0, 0.0, -NAN}), c(t, {1.0 + 1e-9, -0.0, NAN});
  // -0 vs +0 is a bit change; NaN payloads and signs are not.
  CHECK(compareOutputs({a}, {b}, Agreement::Bitwise, DType::F32) != "");
  CHECK(compareOutputs({a}, {Tensor(t, {1.0, -0.0, -NAN})}, Agreement::Bitwise, DType::F32) == "");
  CHECK(compareOutputs({a}, {c}, Agreement::Bitwise, DType::F32) != "");
  CHECK(compareOutputs({a}, {c}, Agreement::Rounding, DType::F32) == "");
  CHECK(compareOutputs({a}, {b}, Agreement::Rounding, DType::F32) == "");
  Tensor d(t, {1.001, 0.0, NAN});
  CHECK(compareOutputs({a}, {d}, Agreement::Rounding, DType::F32) != "");
  CHECK(compareOutputs({a}, {d}, Agreement::Rounding, DType::BF16) == "");
  Tensor inf(t, {INFINITY, 0.0, NAN});
  CHECK(compareOutputs({a}, {inf}, Agreement::Rounding, DType::BF16) != "");
  CHECK(compareOutputs({a}, {Tensor(TensorType{DType::F16, {3}}, {1.0, 0.0, NAN})},
                       Agreement::Rounding, DType::F32) != "");
  CHECK(passAgreement("simplify") == Agreement::Rounding);
  CHECK(passAgreement("cse") == Agreement::Bitwise);
  CHECK(passAgreement("fuse") == Agreement::Bitwise);
}

TEST_CASE("differential comparison: a rounding change may grow as far as the error scale",
          "[differential]") {
  TensorType t{DType::F32, {2}};
  Tensor want(t, {2.0, 3.0}), got(t, {2.5, 3.0});
  CHECK(compareOutputs({want}, {got}, Agreement::Rounding, DType::BF16) != "");
  // |2.5 - 2| = 0.5 <= 2^-5 * 2.5 + 2 * E where E = 0.25; not where E = 0.2.
  CHECK(compareOutputs({want}, {got}, Agreement::Rounding, DType::BF16, nullptr,
                       {Tensor(t, {0.25, 0.0})}) == "");
  CHECK(compareOutputs({want}, {got}, Agreement::Rounding, DType::BF16, nullptr,
                       {Tensor(t, {0.2, 0.0})}) != "");
  // Bitwise passes take no error scale.
  CHECK(compareOutputs({want}, {got}, Agreement::Bitwise, DType::BF16, nullptr,
                       {Tensor(t, {1.0, 1.0})}) != "");
}

TEST_CASE("differential: simplify drops a cast to its own dtype, and the change in rounding "
          "stays within the error scale where the ops after it cancel",
          "[differential][simplify]") {
  // The shape of what 10^6 generated graphs with reductions (graph seeds 10^6 to 2*10^6)
  // shrank to, 56 times, each with a cast to its operand's own dtype before a cancellation:
  // the cast rounds x + 1 to f16, the subtraction leaves that rounding as the whole result
  // and rsqrt amplifies it; without the cast, x + 1 - 1 is x.
  Graph g("cancel");
  Node *x = g.input("x", DType::F16, {4096});
  Node *c = g.cast(g.binary(OpKind::Add, Operand(x), Operand::literal(1.0)), DType::F16);
  Node *d = g.binary(OpKind::Sub, Operand(c), Operand::literal(1.0));
  g.output(g.unary(OpKind::Rsqrt, d));
  std::vector<Tensor> in = randomInputs(g, 171067);
  PipelineCheck r = checkPipeline(g, in, {"simplify"});
  CHECK(r.failure == "");
  CHECK(r.maxRoundingError > roundingTolerance(DType::F16)); // the fixed tolerance alone fails
}

TEST_CASE("differential: simplify keeps the sign of zero (x + 0.0 is not x for x = -0)",
          "[differential][simplify]") {
  // neg(relu(x)) is -0 for x < 0; -0 + 0.0 is +0 (IEEE), so 1/(that) is +Inf, not -Inf.
  Graph g("negzero");
  Node *x = g.input("x", DType::F32, {4});
  Node *z = g.unary(OpKind::Neg, g.unary(OpKind::Relu, x));
  Node *s = g.binary(OpKind::Add, Operand(z), Operand::literal(0.0));
  g.output(g.binary(OpKind::Div, Operand::literal(1.0), Operand(s)));
  Node *t = g.binary(OpKind::Add, Operand::literal(-0.0), Operand(z)); // a true identity
  g.output(g.binary(OpKind::Div, Operand::literal(1.0), Operand(t)));
  Tensor in(TensorType{DType::F32, {4}}, {-1.0, -0.5, 0.25, 1.0});
  PipelineCheck c = checkPipeline(g, {in}, defaultPipeline());
  INFO(c.failure);
  CHECK(c.failure.empty());
}
