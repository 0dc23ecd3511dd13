// The builder API: shape and dtype inference at each call, and one clear error for bad calls.
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Verifier.h"
#include "unit/TestTiming.h"

#include <catch2/catch.hpp>
#include <ctime>

using namespace kfuse;

TEST_CASE("builder reads like the math and infers types", "[builder]") {
  Graph g("mlp");
  auto x = g.input("x", bf16, {64, 4096});
  auto w = g.input("w", bf16, {11008, 4096});
  auto b = g.input("b", bf16, {11008});
  auto y = gelu_tanh(matmul(x, w, {.transB = true}) + b);
  g.output(y);
  CHECK(y.type().str() == "bf16[64, 11008]");
  CHECK(y->kind() == OpKind::GeluTanh);
  CHECK(g.numNodes() == 6);
  CHECK(x->users().size() == 1);
  verify(g);
}

TEST_CASE("builder errors name the op, the shapes and the failing dim", "[builder]") {
  Graph g;
  auto x = g.input("x", bf16, {64, 4096});
  auto w = g.input("w", bf16, {11008, 4096});
  auto f = g.input("f", f32, {64, 4096});
  REQUIRE_THROWS_WITH(x + w, "add: shapes [64, 4096] and [11008, 4096] do not broadcast "
                             "(dim 0: 64 vs 11008)");
  REQUIRE_THROWS_WITH(x * f, Catch::Contains("mul: dtypes bf16 and f32 differ"));
  REQUIRE_THROWS_WITH(matmul(x, w), Catch::Contains("matmul: inner dims differ") &&
                                        Catch::Contains("K 4096 vs 11008"));
  auto v = g.input("v", bf16, {4096});
  REQUIRE_THROWS_WITH(matmul(v, w), Catch::Contains("rank >= 2"));
  REQUIRE_THROWS_WITH(g.input("x", f32, {1}), Catch::Contains("'x' already exists"));
  REQUIRE_THROWS_WITH(g.input("n", f32, {-1}), Catch::Contains("negative"));
  REQUIRE_THROWS_WITH(g.input("h", f32, {1 << 30, 1 << 30}), Catch::Contains("2^48"));
}

TEST_CASE("broadcasting follows NumPy", "[shape]") {
  CHECK(*broadcastShapes({3, 1, 5}, {4, 1}) == Shape{3, 4, 5});
  CHECK(*broadcastShapes({}, {2, 3}) == Shape{2, 3});
  CHECK(*broadcastShapes({1}, {7}) == Shape{7});
  CHECK(!broadcastShapes({3}, {4}));
  CHECK(*broadcastShapes({0, 1}, {1, 5}) == Shape{0, 5});
}

TEST_CASE("matmul: transposes and broadcast batch dims", "[builder]") {
  Graph g;
  auto a = g.input("a", f16, {2, 1, 32, 8});
  auto b = g.input("b", f16, {3, 16, 8});
  auto c = matmul(a, b, {.transB = true});
  CHECK(c.type().str() == "f16[2, 3, 32, 16]");
  auto at = g.input("at", f16, {8, 32});
  auto d = matmul(at, b, {.transA = true, .transB = true});
  CHECK(d.type().str() == "f16[3, 32, 16]");
  g.output(c);
  g.output(d);
  verify(g);
}

TEST_CASE("scalar literals take the tensor's dtype", "[builder]") {
  Graph g;
  auto x = g.input("x", bf16, {10});
  auto y = 2.0 * x - 1.0;
  CHECK(y.type().str() == "bf16[10]");
  CHECK(y->operand(1).isScalar());
  CHECK(y->operand(1).scalar == 1.0);
  g.output(y);
  verify(g);
}

TEST_CASE("rewriting keeps use lists and outputs in sync", "[graph]") {
  Graph g;
  auto x = g.input("x", f32, {8});
  auto a = x * 2.0;
  auto b = a * 3.0;
  auto c = relu(b) + b;
  g.output(b);
  g.output(c);
  auto six = x * 6.0;
  g.replaceAllUsesWith(b, six);
  CHECK(g.outputs()[0] == six.node());
  CHECK(!b->hasUsers());
  CHECK(six->users().size() == 2);
  g.erase(b);
  g.erase(a);
  g.sortTopologically();
  verify(g);
  CHECK(g.numNodes() == 4);
  auto copy = g.clone();
  verify(*copy);
  CHECK(copy->numNodes() == 4);
  CHECK(copy->outputs().size() == 2);
  // Ids survive the copy (erased nodes leave gaps; kernel specs name nodes by id), and a
  // node added to the copy takes a fresh one.
  for (size_t i = 0; i < g.nodes().size(); ++i)
    CHECK(copy->nodes()[i]->id() == g.nodes()[i]->id());
  Value more = exp(Value(copy->outputs()[0]));
  for (const Node *n : g.nodes())
    CHECK(more->id() != n->id());
}

TEST_CASE("the verifier finds a kernel region that is not contiguous", "[verifier]") {
  Graph g;
  auto x = g.input("x", f32, {8});
  auto a = exp(x);
  auto b = a + 1.0;
  auto c = b * a;
  g.output(c);
  int k0 = g.addKernel("k0"), k1 = g.addKernel("k1");
  a->setKernel(k0);
  b->setKernel(k1);
  c->setKernel(k0);
  REQUIRE_THROWS_WITH(verify(g), Catch::Contains("kernel 'k0' is not contiguous"));
  c->setKernel(k1);
  verify(g);
}

TEST_CASE("dtype rounding is round-to-nearest-even", "[dtype]") {
  CHECK(roundToDType(1.0 + 1.0 / 2048, f16) == 1.0);              // tie, to even
  CHECK(roundToDType(1.0 + 3.0 / 2048, f16) == 1.0 + 2.0 / 1024); // tie, to even (up)
  CHECK(roundToDType(65520.0, f16) == INFINITY);
  CHECK(roundToDType(65519.0, f16) == 65504.0);
  CHECK(roundToDType(1.0 + 1.0 / 256, bf16) == 1.0);
  CHECK(roundToDType(std::ldexp(1.0, -24), f16) == std::ldexp(1.0, -24)); // smallest subnormal
  CHECK(std::isnan(roundToDType(NAN, bf16)));
  CHECK(std::isnan(roundToDType(NAN, f16)));
  CHECK(roundToDType(-0.0, bf16) == 0.0);
  CHECK(std::signbit(roundToDType(-0.0, f16)));
  CHECK(parseDType("bf16") == bf16);
  CHECK(!parseDType("f64"));
}

// Found by tests/fuzz/BuilderFuzzer: two inputs within the 2^48-element limit broadcast to
// a result of 2^96 elements, which the builder accepted; fusion's byte counts then
// overflowed int64 (UB). A binary op's result shape is now checked like matmul's.
TEST_CASE("a broadcast past 2^48 elements is an error, not an overflow", "[builder]") {
  Graph g;
  auto a = g.input("a", f32, {int64_t(1) << 48, 1});
  auto b = g.input("b", f32, {1, int64_t(1) << 48});
  CHECK_THROWS_WITH(a + b, "add: shape [281474976710656, 281474976710656] has more than 2^48 "
                           "elements");
  CHECK(g.numNodes() == 2);
  auto c = g.input("c", f32, {int64_t(1) << 24, 1});
  auto d = g.input("d", f32, {1, int64_t(1) << 24});
  CHECK((c * d)->type().numElements() == int64_t(1) << 48); // at the limit is fine
}

TEST_CASE("redirectUses matches setOperand per use, use-list orders included", "[builder]") {
  // Two identical graphs: p has users u1 (reading it twice), u2, u3, u1 again via u4.
  auto build = [](Graph &g) {
    auto x = g.input("x", f32, {4});
    Value p = exp(x), c1 = relu(x), c2 = tanh(x);
    Value u1 = p * p, u2 = p + 1.0, u3 = neg(p), u4 = u2 + p;
    g.output(u1 + u3 + u4 + c1 + c2);
    return std::vector<Node *>{p, c1, c2, u1, u2, u3, u4};
  };
  Graph a, b;
  auto na = build(a), nb = build(b);
  // a: setOperand per slot, in order (u3 and u1 to c1, u4 to c2); b: one redirectUses.
  for (auto [u, c] : {std::pair{3, 1}, std::pair{5, 1}, std::pair{6, 2}})
    for (unsigned i = 0; i < na[u]->numOperands(); ++i)
      if (na[u]->operand(i).node == na[0])
        a.setOperand(na[u], i, Operand(na[c]));
  b.redirectUses(nb[0], {{nb[3], nb[1]}, {nb[5], nb[1]}, {nb[6], nb[2]}});
  verify(a);
  verify(b);
  auto ids = [](llvm::ArrayRef<Node *> ns) {
    std::vector<unsigned> r;
    for (Node *n : ns)
      r.push_back(n->id());
    return r;
  };
  for (size_t i = 0; i < na.size(); ++i) {
    CHECK(ids(na[i]->users()) == ids(nb[i]->users()));
    for (unsigned j = 0; j < na[i]->numOperands(); ++j) {
      const Node *oa = na[i]->operand(j).node, *ob = nb[i]->operand(j).node;
      CHECK((oa ? int(oa->id()) : -1) == (ob ? int(ob->id()) : -1)); // -1: a scalar literal
    }
  }
  CHECK(ids(nb[0]->users()) == std::vector<unsigned>{nb[4]->id()});
  CHECK(nb[1]->users().size() == 4); // c1: u1 twice, u3, and the output sum
}

TEST_CASE("a graph of 10^6 inputs builds in linear time", "[graph][perf]") {
  const int n = 1000000;
  Graph g("wide");
  std::clock_t start = std::clock(); // CPU time: robust against a busy machine
  for (int i = 0; i < n; ++i)
    g.input(fmt::format("x{}", i), f32, {4});
  g.output(Value(g.inputs()[0]) + Value(g.inputs()[n - 1]));
  double seconds = double(std::clock() - start) / CLOCKS_PER_SEC;
  WARN("10^6 inputs, one op and an output: built in " << seconds << " s of CPU");
  CHECK(seconds < 5.0 * test::kTimeSlack); // a scan per input took about half an hour
  REQUIRE(g.inputs().size() == size_t(n));
  // A taken name is still refused, with the message it always had, and adds nothing.
  for (const char *taken : {"x0", "x500000", "x999999"})
    REQUIRE_THROWS_WITH(g.input(taken, f32, {4}),
                        fmt::format("input: an input named '{}' already exists", taken));
  CHECK(g.inputs().size() == size_t(n));
  CHECK(g.numNodes() == size_t(n) + 1);
}

TEST_CASE("input names stay unique through renames and clone", "[graph]") {
  Graph g;
  Value a = g.input("a", f32, {2});
  a->setName("b"); // frees "a", takes "b"
  CHECK_NOTHROW(g.input("a", f32, {2}));
  REQUIRE_THROWS_WITH(g.input("b", f32, {2}), "input: an input named 'b' already exists");
  g.output(a);
  auto c = g.clone();
  REQUIRE_THROWS_WITH(c->input("a", f32, {2}), "input: an input named 'a' already exists");
  REQUIRE_THROWS_WITH(c->input("b", f32, {2}), "input: an input named 'b' already exists");
  CHECK_NOTHROW(c->input("c", f32, {2}));
  // Two inputs renamed to one name (the verifier rejects that graph): the name stays taken
  // until neither has it.
  Graph h;
  Value p = h.input("p", f32, {2}), q = h.input("q", f32, {2});
  q->setName("p");
  p->setName("r");
  REQUIRE_THROWS_WITH(h.input("p", f32, {2}), "input: an input named 'p' already exists");
  q->setName("s");
  CHECK_NOTHROW(h.input("p", f32, {2}));
  // A non-input's name is not an input name.
  Value y = relu(Value(h.inputs()[0]));
  y->setName("t");
  CHECK_NOTHROW(h.input("t", f32, {2}));
}
