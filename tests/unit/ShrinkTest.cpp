// The shrinker (tests/unit/Shrink.h) on artificial failures whose minimal graphs are known:
// it must reach them exactly (not just "smaller"), keep the failure, and write a reproducer
// that parses back to the same graph.
#include "Shrink.h"
#include "RandomGraph.h"

#include "ir/Builder.h"
#include "ir/Interpreter.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Random.h"

#include <catch2/catch.hpp>
#include <unistd.h>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace kfuse;

namespace {

bool hasKind(const Graph &g, OpKind k) {
  for (const Node *n : g.nodes())
    if (n->kind() == k)
      return true;
  return false;
}

size_t countOps(const Graph &g) {
  size_t n = 0;
  for (const Node *x : g.nodes())
    n += !x->isInput();
  return n;
}

/// Every input of the graph has shape [1].
bool allScalarShaped(const Graph &g) {
  for (const Node *n : g.inputs())
    if (n->shape() != Shape{1})
      return false;
  return true;
}

} // namespace

TEST_CASE("shrinker: 'contains a pow' shrinks to one pow on one [1] input", "[shrink]") {
  test::RandomGraphOptions o;
  o.unboundedOps = true;
  o.minOps = 12;
  o.maxOps = 30;
  int shrunk = 0;
  for (uint64_t seed = 0; seed < 200 && shrunk < 10; ++seed) {
    auto g = test::randomGraph(seed, o);
    auto fails = [](const Graph &h) { return hasKind(h, OpKind::Pow); };
    if (!fails(*g) || countOps(*g) < 10)
      continue;
    INFO("seed " << seed << "\n" << printGraph(*g));
    test::ShrinkResult r = test::shrinkGraph(*g, fails);
    INFO("shrunk to\n" << printGraph(*r.graph));
    REQUIRE(fails(*r.graph));
    // Minimal: pow(x, literal) -- a binary op needs one tensor operand, and literal
    // replacement removes the other one.
    CHECK(countOps(*r.graph) == 1);
    CHECK(r.graph->inputs().size() == 1);
    CHECK(r.graph->outputs().size() == 1);
    CHECK(allScalarShaped(*r.graph));
    CHECK(r.accepted > 0);
    ++shrunk;
  }
  CHECK(shrunk == 10);
}

TEST_CASE("shrinker: 'exp feeds pow' keeps exactly the two ops that matter", "[shrink]") {
  // Built by hand around the pattern, with distractions: other outputs, matmul, broadcasts.
  Graph g("pattern");
  Value x = g.input("x", DType::BF16, {3, 5, 7});
  Value y = g.input("y", DType::BF16, {5, 1});
  Value w = g.input("w", DType::BF16, {7, 4});
  Value mm = matmul(x, w);
  Value e = exp(mm + 1.0);
  Value t = tanh(x * y);
  Value p = pow(e, cast(abs(mm), DType::BF16));
  g.output(t);
  g.output(p + mm);
  g.output(e);
  auto fails = [](const Graph &h) {
    for (const Node *n : h.nodes())
      if (n->kind() == OpKind::Pow && n->operand(0).node &&
          n->operand(0).node->kind() == OpKind::Exp)
        return true;
    return false;
  };
  REQUIRE(fails(g));
  test::ShrinkResult r = test::shrinkGraph(g, fails);
  INFO(printGraph(*r.graph));
  REQUIRE(fails(*r.graph));
  CHECK(countOps(*r.graph) == 2); // exp, pow
  CHECK(r.graph->inputs().size() == 1);
  CHECK(r.graph->outputs().size() == 1);
  CHECK(allScalarShaped(*r.graph));
}

TEST_CASE("shrinker: a numeric failure (an output holds NaN) shrinks to a tiny graph", "[shrink]") {
  test::RandomGraphOptions o;
  o.unboundedOps = true;
  o.minOps = 10;
  o.maxOps = 25;
  auto hasNaN = [](const Graph &h) {
    for (const Tensor &t : interpret(h, randomInputs(h, 1)))
      for (double v : t.data)
        if (std::isnan(v))
          return true;
    return false;
  };
  int shrunk = 0;
  for (uint64_t seed = 0; seed < 300 && shrunk < 5; ++seed) {
    auto g = test::randomGraph(seed, o);
    if (countOps(*g) < 10 || !hasNaN(*g))
      continue;
    test::ShrinkResult r = test::shrinkGraph(*g, hasNaN);
    INFO("seed " << seed << " shrunk to\n" << printGraph(*r.graph));
    REQUIRE(hasNaN(*r.graph));
    CHECK(countOps(*r.graph) <= 2);
    CHECK(r.graph->outputs().size() == 1);
    CHECK(test::graphSize(*r.graph) < test::graphSize(*g));
    ++shrunk;
  }
  CHECK(shrunk == 5);
}

TEST_CASE("shrinker: dims shrink together, so a matmul keeps matching", "[shrink]") {
  Graph g("mm");
  Value a = g.input("a", DType::F32, {2, 6, 9});
  Value b = g.input("b", DType::F32, {9, 5});
  g.output(relu(matmul(a, b)));
  auto fails = [](const Graph &h) { return hasKind(h, OpKind::MatMul); };
  test::ShrinkResult r = test::shrinkGraph(g, fails);
  INFO(printGraph(*r.graph));
  REQUIRE(fails(*r.graph));
  CHECK(countOps(*r.graph) == 1);
  for (const Node *n : r.graph->inputs())
    CHECK(n->type().numElements() == 1);
}

TEST_CASE("shrinker: the reproducer file parses back to the shrunk graph", "[shrink]") {
  auto g = test::randomGraph(42);
  auto dir = std::filesystem::temp_directory_path() /
             ("kfuse-shrink-test-" + std::to_string(::getpid())); // test cases run in parallel
  std::filesystem::remove_all(dir);
  std::string path =
      test::saveReproducer(*g, "r42", "a test reproducer", test::reproducerDir(dir.string()));
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  CHECK(text.find("# kfuse reproducer, shrunk by tests/unit/Shrink.h: a test reproducer") == 0);
  CHECK(text.find("tests/lit/regress/r42.kf") != std::string::npos);
  auto back = parseFile(path);
  REQUIRE(back.size() == 1);
  CHECK(printGraph(*back[0]) == printGraph(*g));
  std::filesystem::remove_all(dir);
}
