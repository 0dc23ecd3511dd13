// The reference interpreter: hand-computed values for every op, PyTorch's NaN rules, NumPy
// broadcasting, matmul against hand values and a naive loop, rounding, and input errors.
#include "ir/Interpreter.h"
#include "ir/Builder.h"
#include "ir/Compare.h"
#include "ir/Error.h"
#include "ir/Random.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

using namespace kfuse;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor tensor(DType dt, Shape shape, std::vector<double> values) {
  return Tensor(TensorType{dt, std::move(shape)}, std::move(values));
}

/// Checks `got` against `want` elementwise: NaN must match NaN, else relative error <= tol.
void checkClose(const Tensor &got, const std::vector<double> &want, double tol = 1e-6) {
  REQUIRE(got.data.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i << ": got " << got.data[i] << ", want " << want[i]);
    if (std::isnan(want[i]))
      CHECK(std::isnan(got.data[i]));
    else if (got.data[i] != want[i]) // equal infinities pass here
      CHECK(std::fabs(got.data[i] - want[i]) <= tol * std::max(1.0, std::fabs(want[i])));
  }
}

/// Hand-computed results of every op on fixed operands (values from Python's math module).
/// Unary ops see x = {0.5, -1.5}; binary ops a = {1.5, -2, 0.5}, b = {-0.75, 4, 0.5}.
/// Input, cast and matmul have their own tests below; they are listed so the table test
/// knows them.
struct OpCase {
  std::vector<double> want;
  bool separate = false; // tested by its own TEST_CASE
};
const std::map<OpKind, OpCase> &opTable() {
  static const std::map<OpKind, OpCase> table = {
      {OpKind::Input, {{}, true}},
      {OpKind::Cast, {{}, true}},
      {OpKind::MatMul, {{}, true}},
      {OpKind::Sum, {{}, true}}, // the reductions: "interpreter: reductions" below
      {OpKind::Mean, {{}, true}},
      {OpKind::Amax, {{}, true}},
      {OpKind::Amin, {{}, true}},
      {OpKind::Neg, {{-0.5, 1.5}}},
      {OpKind::Abs, {{0.5, 1.5}}},
      {OpKind::Exp, {{1.6487212707001282, 0.22313016014842982}}},
      {OpKind::Log, {{-0.6931471805599453, kNaN}}},
      {OpKind::Sqrt, {{0.7071067811865476, kNaN}}},
      {OpKind::Rsqrt, {{1.414213562373095, kNaN}}},
      {OpKind::Tanh, {{0.46211715726000974, -0.9051482536448664}}},
      {OpKind::Sigmoid, {{0.6224593312018546, 0.18242552380635635}}},
      {OpKind::Relu, {{0.5, 0.0}}},
      {OpKind::Gelu, {{0.34573123063700656, -0.10021080190328713}}},
      {OpKind::GeluTanh, {{0.34571400982514394, -0.10042842301976707}}},
      {OpKind::Silu, {{0.3112296656009273, -0.2736382857095345}}},
      {OpKind::Add, {{0.75, 2.0, 1.0}}},
      {OpKind::Sub, {{2.25, -6.0, 0.0}}},
      {OpKind::Mul, {{-1.125, -8.0, 0.25}}},
      {OpKind::Div, {{-2.0, -0.5, 1.0}}},
      {OpKind::Max, {{1.5, 4.0, 0.5}}},
      {OpKind::Min, {{-0.75, -2.0, 0.5}}},
      {OpKind::Pow, {{0.7377879464668811, 16.0, 0.7071067811865476}}},
  };
  return table;
}

} // namespace

TEST_CASE("interpreter: every op of Ops.def has a hand-computed value", "[interp]") {
  const OpKind all[] = {
#define KF_OP(E, name, arity, cls) OpKind::E,
#include "ir/Ops.def"
  };
  for (OpKind k : all) {
    INFO("op " << opName(k));
    auto it = opTable().find(k);
    REQUIRE(it != opTable().end()); // a new op needs a row in the table above
    if (it->second.separate)
      continue;
    Graph g("one_op");
    std::vector<Tensor> in;
    if (opClass(k) == OpClass::Unary) {
      auto x = g.input("x", f32, {2});
      g.output(g.unary(k, x));
      in.push_back(tensor(f32, {2}, {0.5, -1.5}));
    } else {
      REQUIRE(opClass(k) == OpClass::Binary);
      auto a = g.input("a", f32, {3});
      auto b = g.input("b", f32, {3});
      g.output(g.binary(k, a.node(), b.node()));
      in.push_back(tensor(f32, {3}, {1.5, -2.0, 0.5}));
      in.push_back(tensor(f32, {3}, {-0.75, 4.0, 0.5}));
    }
    std::vector<Tensor> out = interpret(g, in);
    REQUIRE(out.size() == 1);
    checkClose(out[0], it->second.want);
  }
}

TEST_CASE("interpreter: scalar semantics are exact in float64", "[interp]") {
  CHECK(evalUnary(OpKind::Exp, 0.5) == Approx(1.6487212707001282).epsilon(1e-15));
  CHECK(evalUnary(OpKind::GeluTanh, -1.5) == Approx(-0.10042842301976707).epsilon(1e-14));
  CHECK(evalUnary(OpKind::Gelu, 0.5) == Approx(0.34573123063700656).epsilon(1e-14));
  // The tail, where 1 + erf(x / sqrt 2) cancels to 0 in float64: 0.5 x erfc(-x / sqrt 2)
  // (gelu(-10) = -7.619853024160593e-23).
  CHECK(evalUnary(OpKind::Gelu, -10.0) == Approx(-7.619853024160593e-23).epsilon(1e-12));
  CHECK(evalUnary(OpKind::Silu, -1.5) == Approx(-0.2736382857095345).epsilon(1e-14));
  CHECK(evalUnary(OpKind::Rsqrt, 4.0) == 0.5);
  CHECK(evalUnary(OpKind::Relu, -3.0) == 0.0);
  CHECK(evalBinary(OpKind::Pow, 2.0, 10.0) == 1024.0);
  CHECK(evalBinary(OpKind::Div, 1.0, 0.0) == std::numeric_limits<double>::infinity());
  REQUIRE_THROWS_WITH(evalUnary(OpKind::Add, 1.0), Catch::Contains("'add' is not a unary op"));
  REQUIRE_THROWS_WITH(evalBinary(OpKind::MatMul, 1.0, 2.0),
                      Catch::Contains("'matmul' is not a binary op"));
}

TEST_CASE("interpreter: NaN propagates as in PyTorch", "[interp][nan]") {
  CHECK(std::isnan(evalUnary(OpKind::Relu, kNaN)));
  CHECK(std::isnan(evalBinary(OpKind::Max, 1.0, kNaN)));
  CHECK(std::isnan(evalBinary(OpKind::Max, kNaN, 1.0)));
  CHECK(std::isnan(evalBinary(OpKind::Min, 1.0, kNaN)));
  CHECK(std::isnan(evalBinary(OpKind::Min, kNaN, -1.0)));

  Graph g;
  auto x = g.input("x", bf16, {4});
  auto y = g.input("y", bf16, {4});
  g.output(relu(x));
  g.output(max(x, y));
  g.output(min(y, x));
  g.output(exp(x) + 1.0);
  g.output(max(x, 0.0)); // the literal side is not NaN, the result still is
  auto out = interpret(
      g, {tensor(bf16, {4}, {kNaN, -2.0, 3.0, kNaN}), tensor(bf16, {4}, {1.0, kNaN, -1.0, kNaN})});
  checkClose(out[0], {kNaN, 0.0, 3.0, kNaN});
  checkClose(out[1], {kNaN, kNaN, 3.0, kNaN});
  checkClose(out[2], {kNaN, kNaN, -1.0, kNaN});
  checkClose(out[3], {kNaN, 1.1353352832366128, 21.085536923187668, kNaN}, 1e-2); // bf16 output
  checkClose(out[4], {kNaN, 0.0, 3.0, kNaN});
}

TEST_CASE("interpreter: broadcasting follows NumPy", "[interp][broadcast]") {
  SECTION("row vector over a matrix, on either side") {
    Graph g;
    auto a = g.input("a", f32, {2, 3});
    auto b = g.input("b", f32, {3});
    g.output(a - b);
    g.output(b - a);
    auto out =
        interpret(g, {tensor(f32, {2, 3}, {1, 2, 3, 4, 5, 6}), tensor(f32, {3}, {10, 20, 30})});
    checkClose(out[0], {-9, -18, -27, -6, -15, -24});
    checkClose(out[1], {9, 18, 27, 6, 15, 24});
    CHECK(out[0].type.str() == "f32[2, 3]");
  }
  SECTION("size-1 dims on both sides: [2, 1] x [1, 3]") {
    Graph g;
    auto a = g.input("a", f32, {2, 1});
    auto b = g.input("b", f32, {1, 3});
    g.output(a * b);
    auto out = interpret(g, {tensor(f32, {2, 1}, {2, 3}), tensor(f32, {1, 3}, {1, 10, 100})});
    checkClose(out[0], {2, 20, 200, 3, 30, 300});
  }
  SECTION("rank 3 against rank 2 with inner size-1 dims: [2, 1, 2] + [3, 1]") {
    Graph g;
    auto a = g.input("a", f32, {2, 1, 2});
    auto b = g.input("b", f32, {3, 1});
    g.output(a + b);
    auto out =
        interpret(g, {tensor(f32, {2, 1, 2}, {1, 2, 3, 4}), tensor(f32, {3, 1}, {10, 20, 30})});
    CHECK(out[0].type.str() == "f32[2, 3, 2]");
    checkClose(out[0], {11, 12, 21, 22, 31, 32, 13, 14, 23, 24, 33, 34});
  }
  SECTION("scalar tensors f32[] and size-1 tensors") {
    Graph g;
    auto s = g.input("s", f32, {});
    auto one = g.input("one", f32, {1});
    auto m = g.input("m", f32, {2, 2});
    g.output(m / s);
    g.output(one - m);
    g.output(s * s);
    auto out = interpret(
        g, {tensor(f32, {}, {4}), tensor(f32, {1}, {1}), tensor(f32, {2, 2}, {4, 8, 12, 16})});
    checkClose(out[0], {1, 2, 3, 4});
    checkClose(out[1], {-3, -7, -11, -15});
    CHECK(out[2].type.str() == "f32[]");
    checkClose(out[2], {16});
  }
  SECTION("empty tensors stay empty") {
    Graph g;
    auto a = g.input("a", f32, {0, 3});
    auto b = g.input("b", f32, {3});
    g.output(a + b);
    auto out = interpret(g, {tensor(f32, {0, 3}, {}), tensor(f32, {3}, {1, 2, 3})});
    CHECK(out[0].data.empty());
  }
}

TEST_CASE("interpreter: scalar literals are their f32 value, on either side", "[interp]") {
  Graph g;
  auto x = g.input("x", f32, {2});
  g.output(x - 0.1);
  g.output(2.0 - x);
  g.output(1.0 / x);
  // x holds float(0.1): with the literal taken as f32 the difference is exactly 0, with the
  // double 0.1 it would be 1.49e-9.
  auto out = interpret(g, {tensor(f32, {2}, {0.1, 4.0})});
  CHECK(out[0].data[0] == 0.0);
  CHECK(out[0].data[1] == Approx(3.9).epsilon(1e-7));
  checkClose(out[1], {2.0 - static_cast<float>(0.1), -2.0});
  checkClose(out[2], {1.0 / static_cast<float>(0.1), 0.25});
}

TEST_CASE("interpreter: matmul on hand-computed 2x2 values", "[interp][matmul]") {
  Graph g;
  auto a = g.input("a", f32, {2, 2});
  auto b = g.input("b", f32, {2, 2});
  g.output(matmul(a, b));
  g.output(matmul(a, b, {.transA = true}));
  g.output(matmul(a, b, {.transB = true}));
  g.output(matmul(a, b, {.transA = true, .transB = true}));
  auto out = interpret(g, {tensor(f32, {2, 2}, {1, 2, 3, 4}), tensor(f32, {2, 2}, {5, 6, 7, 8})});
  checkClose(out[0], {19, 22, 43, 50});
  checkClose(out[1], {26, 30, 38, 44});
  checkClose(out[2], {17, 23, 39, 53});
  checkClose(out[3], {23, 31, 34, 46});
}

namespace {
/// The obvious loop, written independently of the interpreter's blocked one: batch dims
/// broadcast by index, operands read through explicit transposes.
std::vector<double> naiveMatMul(const Tensor &a, const Tensor &b, bool ta, bool tb,
                                const Shape &outShape) {
  size_t ra = a.shape().size(), rb = b.shape().size(), ro = outShape.size();
  int64_t M = outShape[ro - 2], N = outShape[ro - 1];
  int64_t K = ta ? a.shape()[ra - 2] : a.shape()[ra - 1];
  int64_t batches = numElements(llvm::ArrayRef<int64_t>(outShape).drop_back(2));
  std::vector<double> out(static_cast<size_t>(batches * M * N));
  for (int64_t bi = 0; bi < batches; ++bi) {
    // Unravel bi over the output batch dims, then ravel into each operand's batch dims.
    int64_t rest = bi, offA = 0, offB = 0, strideA = 1, strideB = 1;
    for (size_t d = ro - 2; d-- > 0;) {
      int64_t idx = rest % outShape[d];
      rest /= outShape[d];
      size_t fromEnd = ro - 2 - d; // 1 for the innermost batch dim
      if (fromEnd <= ra - 2) {
        int64_t dim = a.shape()[ra - 2 - fromEnd];
        offA += (dim == 1 ? 0 : idx) * strideA;
        strideA *= dim;
      }
      if (fromEnd <= rb - 2) {
        int64_t dim = b.shape()[rb - 2 - fromEnd];
        offB += (dim == 1 ? 0 : idx) * strideB;
        strideB *= dim;
      }
    }
    const double *A = a.data.data() + offA * M * K, *B = b.data.data() + offB * K * N;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += (ta ? A[k * M + i] : A[i * K + k]) * (tb ? B[j * K + k] : B[k * N + j]);
        out[static_cast<size_t>((bi * M + i) * N + j)] = static_cast<float>(s);
      }
  }
  return out;
}
} // namespace

TEST_CASE("interpreter: matmul with transposes and batch broadcast matches a naive loop",
          "[interp][matmul]") {
  struct Case {
    Shape a, b;
    bool ta, tb;
  };
  const Case cases[] = {
      {{3, 5}, {5, 4}, false, false},
      {{5, 3}, {5, 4}, true, false},
      {{3, 5}, {4, 5}, false, true},
      {{5, 3}, {4, 5}, true, true},
      {{2, 1, 3, 5}, {4, 5, 6}, false, false}, // batch [2, 1] x [4] -> [2, 4]
      {{3, 2, 5}, {1, 2, 7}, true, false},     // batch [3] x [1]
      {{1, 4, 3}, {2, 6, 3}, false, true},
      {{3, 300}, {600, 300}, false, true}, // crosses the 512 x 128 blocking
      {{2, 200, 3}, {200, 530}, true, false},
  };
  uint64_t seed = 1;
  for (const Case &c : cases) {
    Graph g;
    auto a = g.input("a", f32, c.a);
    auto b = g.input("b", f32, c.b);
    auto y = matmul(a, b, {.transA = c.ta, .transB = c.tb});
    g.output(y);
    INFO("a " << shapeToString(c.a) << (c.ta ? "^T" : "") << " x b " << shapeToString(c.b)
              << (c.tb ? "^T" : ""));
    auto in = randomInputs(g, seed++);
    auto out = interpret(g, in);
    checkClose(out[0], naiveMatMul(in[0], in[1], c.ta, c.tb, y.type().shape), 1e-6);
  }
}

TEST_CASE("interpreter: matmul accumulates in float64, then rounds once", "[interp][matmul]") {
  // 2^24 + 1 + 1 - 2^24 in f32 steps would be 0 or 2 depending on order; float64 gives 2.
  Graph g;
  auto a = g.input("a", f32, {1, 4});
  auto b = g.input("b", f32, {4, 1});
  g.output(matmul(a, b));
  auto out = interpret(
      g, {tensor(f32, {1, 4}, {16777216.0, 1, 1, -16777216.0}), tensor(f32, {4, 1}, {1, 1, 1, 1})});
  CHECK(out[0].data[0] == 2.0);
}

TEST_CASE("interpreter: bf16 and f16 rounding of inputs, casts and outputs", "[interp][dtype]") {
  SECTION("cast rounds to nearest even") {
    Graph g;
    auto x = g.input("x", f32, {4});
    g.output(cast(x, bf16));
    g.output(cast(x, f16));
    auto out = interpret(g, {tensor(f32, {4}, {1.00390625, 1.01171875, 3.14159265, 70000.0})});
    checkClose(out[0], {1.0, 1.015625, 3.140625, 70144.0}, 0);
    checkClose(out[1], {1.00390625, 1.01171875, 3.140625, std::numeric_limits<double>::infinity()},
               0);
    CHECK(std::isinf(out[1].data[3]));
  }
  SECTION("inputs are rounded to their dtype when bound") {
    Graph g;
    auto x = g.input("x", bf16, {2});
    g.output(cast(x, f32));
    auto out = interpret(g, {tensor(bf16, {2}, {1.00390625, 1.01171875})});
    checkClose(out[0], {1.0, 1.015625}, 0);
  }
  SECTION("outputs are rounded to their dtype; intermediates stay float64") {
    Graph g;
    auto x = g.input("x", bf16, {1});
    auto y = x + 0.00390625; // 1 + 2^-8: a bf16 tie, rounds to 1
    g.output(y);
    g.output(cast(y, f32));              // reads y before any store: 1.00390625
    g.output(cast(x + 0.01171875, f16)); // f16 holds 1 + 3 * 2^-8 exactly
    auto out = interpret(g, {tensor(bf16, {1}, {1.0})});
    CHECK(out[0].data[0] == 1.0);
    CHECK(out[1].data[0] == 1.00390625);
    CHECK(out[2].data[0] == 1.01171875);
  }
  SECTION("f32 outputs are rounded to f32") {
    Graph g;
    auto x = g.input("x", f32, {1});
    g.output(x / 3.0);
    auto out = interpret(g, {tensor(f32, {1}, {1.0})});
    CHECK(out[0].data[0] == static_cast<double>(1.0f / 3.0f));
  }
}

TEST_CASE("interpreter: inputs must match the graph's", "[interp][errors]") {
  Graph g("mlp");
  g.input("x", bf16, {2, 3});
  auto w = g.input("w", bf16, {3});
  g.output(relu(w));
  Tensor x = tensor(bf16, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor wOk = tensor(bf16, {3}, {1, 2, 3});
  REQUIRE_THROWS_WITH(interpret(g, {x}), "graph 'mlp' has 2 inputs, but 1 tensor was given");
  REQUIRE_THROWS_WITH(interpret(g, {x, tensor(bf16, {4}, {1, 2, 3, 4})}),
                      "input 1 ('w') of graph 'mlp' is bf16[3], but the tensor given is bf16[4]");
  REQUIRE_THROWS_WITH(interpret(g, {tensor(f32, {2, 3}, {1, 2, 3, 4, 5, 6}), wOk}),
                      Catch::Contains("input 0 ('x')") && Catch::Contains("f32[2, 3]"));
  REQUIRE_THROWS_WITH(interpret(g, {x, tensor(bf16, {3}, {1, 2})}),
                      Catch::Contains("input 1 ('w')") && Catch::Contains("holds 2 values"));
  CHECK(interpret(g, {x, wOk})[0].data == std::vector<double>{1, 2, 3});
}

TEST_CASE("interpreter: refuses graphs too big for a CPU oracle", "[interp][errors]") {
  Graph g("seed_mul");
  auto x = g.input("x", f32, {1000000000});
  g.output(x * 2.0 * 3.0);
  // The check comes before the inputs are even looked at: the caller cannot make them.
  REQUIRE_THROWS_WITH(interpret(g, {Tensor()}), Catch::Contains("%x is f32[1000000000]") &&
                                                    Catch::Contains("test-sized graphs"));
}

TEST_CASE("interpreter: a 200,000-node chain runs without recursion", "[interp][big]") {
  Graph g("chain");
  auto x = g.input("x", f32, {16});
  Value v = x;
  for (int i = 0; i < 100000; ++i)
    v = (i % 2) ? v - 0.5 : v + 1.5; // two nodes per step: net +1 per pair of steps
  g.output(v);
  REQUIRE(g.numNodes() == 100001);
  Value w = v;
  for (int i = 0; i < 100000; ++i)
    w = relu(w);
  g.output(w);
  std::vector<double> xs(16);
  for (int i = 0; i < 16; ++i)
    xs[i] = i;
  auto out = interpret(g, {tensor(f32, {16}, xs)});
  for (int i = 0; i < 16; ++i) {
    CHECK(out[0].data[i] == i + 50000.0);
    CHECK(out[1].data[i] == i + 50000.0);
  }
}

TEST_CASE("interpreter: outputs, shared values and kernel regions", "[interp]") {
  Graph g;
  auto x = g.input("x", f32, {3});
  auto a = x * 2.0;
  auto b = a + a;     // reads a twice
  auto dead = exp(b); // no users, not an output: skipped
  (void)dead;
  g.output(a); // an output that also feeds b
  g.output(b);
  g.output(a); // listed twice
  g.output(x); // an input as an output
  Tensor in = tensor(f32, {3}, {1, 2, 3});
  auto plain = interpret(g, {in});
  REQUIRE(plain.size() == 4);
  checkClose(plain[0], {2, 4, 6});
  checkClose(plain[1], {4, 8, 12});
  checkClose(plain[2], {2, 4, 6});
  checkClose(plain[3], {1, 2, 3});

  int k = g.addKernel("k0");
  a->setKernel(k);
  b->setKernel(k);
  auto fused = interpret(g, {in});
  for (size_t i = 0; i < plain.size(); ++i)
    CHECK(fused[i].data == plain[i].data);
}

TEST_CASE("random tensors are deterministic, in [-1, 1), rounded and never zero", "[random]") {
  TensorType t{bf16, {64, 33}};
  Tensor a = randomTensor(t, 7, 0), b = randomTensor(t, 7, 0);
  Tensor c = randomTensor(t, 7, 1), d = randomTensor(t, 8, 0);
  CHECK(a.type == t);
  CHECK(a.data == b.data);
  CHECK(a.data != c.data);
  CHECK(a.data != d.data);
  double lo = 1, hi = -1, sum = 0;
  for (double v : a.data) {
    CHECK(v == roundToDType(v, bf16));
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
    REQUIRE(v != 0.0);
  }
  CHECK(lo >= -1.0);
  CHECK(hi < 1.0);
  CHECK(lo < -0.9); // 2112 uniform draws cover the range
  CHECK(hi > 0.9);
  CHECK(std::fabs(sum / a.data.size()) < 0.1);

  Graph g;
  g.input("p", f16, {5});
  g.input("q", f32, {});
  auto ins = randomInputs(g, 3);
  REQUIRE(ins.size() == 2);
  CHECK(ins[0].data == randomTensor({f16, {5}}, 3, 0).data);
  CHECK(ins[1].data == randomTensor({f32, {}}, 3, 1).data);
  CHECK(ins[1].data.size() == 1);
  // Pinned values: a change of generator changes every recorded seed, so it must be deliberate.
  CHECK(randomTensor({f32, {2}}, 0, 0).data ==
        std::vector<double>{-0.23845167458057404, 0.45389997959136963});
  CHECK(randomTensor({bf16, {2}}, 7, 2).data == std::vector<double>{0.78125, 0.9609375});
}

TEST_CASE("interpreter: values a plan stores are rounded to their dtype", "[interp]") {
  // t = x * (1 + 2^-8) is 1 + 2^-7 + 2^-8 + 2^-15 exactly, 1 + 2^-6 once stored in bf16, so
  // y = t - x is 2^-8 + 2^-15 when t stays in a kernel and 2^-7 when a kernel stores it.
  Graph g("stored");
  Value x = g.input("x", bf16, {1});
  Value t = x * 1.00390625;
  g.output(t - x);
  std::vector<Tensor> in = {Tensor(x->type(), {1.0078125})};
  CHECK(interpret(g, in)[0].data[0] == 0.00390625 + 0.000030517578125);
  CHECK(interpret(g, in, {t->id()})[0].data[0] == 0.0078125);
  CHECK(interpret(g, in, {x->id()})[0].data[0] ==
        0.00390625 + 0.000030517578125); // inputs already are
}

TEST_CASE("compareValues: dtype tolerances, NaN and Inf only where the reference has them",
          "[compare]") {
  Tolerance f32tol = Tolerance::of(DType::F32);
  CHECK(compareValues({1.0, 2.0}, {1.0, 2.0}, f32tol) == "");
  CHECK(compareValues({1.0 + 3e-6, 2.0 + 6e-6}, {1.0, 2.0}, f32tol).find("norm") !=
        std::string::npos);
  CHECK(compareValues({1.0 + 1e-4, 2.0}, {1.0, 2.0}, f32tol).find("element 0") !=
        std::string::npos);
  CHECK(compareValues({1.02}, {1.0}, Tolerance::of(DType::BF16)).find("norm") != std::string::npos);
  CHECK(compareValues({1.005}, {1.0}, Tolerance::of(DType::BF16)) == "");
  CHECK(compareValues({NAN}, {NAN}, f32tol) == "");
  CHECK(compareValues({0.0}, {NAN}, f32tol).find("element 0") != std::string::npos);
  CHECK(compareValues({NAN}, {0.0}, f32tol).find("element 0") != std::string::npos);
  CHECK(compareValues({INFINITY}, {INFINITY}, f32tol) == "");
  CHECK(compareValues({-INFINITY}, {INFINITY}, f32tol) != "");
  CHECK(compareValues({1e30}, {INFINITY}, f32tol) != "");
  CHECK(compareValues({1.0}, {1.0, 2.0}, f32tol) != "");
}

TEST_CASE("interpreter: reductions", "[interp][reduce]") {
  // x = [[1, -2, 3], [0.5, NaN, -4]] reduced over each axis, with and without keepdims.
  auto run = [](OpKind k, IntList axes, bool keep) {
    Graph g("r");
    auto x = g.input("x", f32, {2, 3});
    g.output(g.reduce(k, x, axes, keep));
    return interpret(g, {tensor(f32, {2, 3}, {1, -2, 3, 0.5, kNaN, -4})})[0];
  };
  checkClose(run(OpKind::Sum, {-1}, false), {2, kNaN});
  checkClose(run(OpKind::Sum, {0}, true), {1.5, kNaN, -1});
  checkClose(run(OpKind::Mean, {1}, true), {2.0 / 3, kNaN});
  checkClose(run(OpKind::Amax, {1}, false), {3, kNaN});
  checkClose(run(OpKind::Amin, {0}, false), {0.5, kNaN, -4});
  checkClose(run(OpKind::Amax, {0, 1}, false), {kNaN});
  CHECK(run(OpKind::Sum, {1, 0}, true).type.shape == Shape{1, 1});
  // An empty axis: sum 0, mean NaN; amax refuses it when the graph is built.
  Graph g("empty");
  auto e = g.input("e", f32, {2, 0});
  g.output(sum(e, {1}));
  g.output(mean(e, {-1}));
  std::vector<Tensor> out = interpret(g, {tensor(f32, {2, 0}, {})});
  checkClose(out[0], {0, 0});
  checkClose(out[1], {kNaN, kNaN});
  CHECK_THROWS_WITH(amax(e, {1}), Catch::Contains("amax: axis 1 of operand f32[2, 0] is empty"));
  CHECK_THROWS_WITH(sum(e, {2}), Catch::Contains("sum: axis 2 is out of range for operand f32[2, 0]"));
  CHECK_THROWS_WITH(sum(e, {1, -1}), Catch::Contains("sum: axis 1 is named twice"));
}

// The sequential definition randomTensor must keep: SplitMix64 draws in order, each rounded
// to the dtype, the ones that round to 0 or to 1 skipped.
static std::vector<double> sequentialRandom(const TensorType &t, uint64_t seed, uint64_t stream) {
  auto mix = [](uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  uint64_t state = mix(seed ^ 0x6b667573652d726eull) ^ mix(stream * 0xd1b54a32d192ed03ull + 1);
  std::vector<double> out(static_cast<size_t>(t.numElements()));
  for (double &v : out) {
    double r;
    do
      r = roundToDType(static_cast<double>(mix(state += 0x9e3779b97f4a7c15ull) >> 11) * 0x1p-52 -
                           1.0,
                       t.dtype);
    while (r >= 1.0 || r == 0.0);
    v = r;
  }
  return out;
}

TEST_CASE("random tensors are filled on every core with the values of one sequential pass",
          "[random]") {
  // f16 and bf16 skip a draw in about every 2^11 and 2^9: blocks of 2^16 draws each hold
  // their own count of skips, so a wrong offset between blocks shows at once.
  for (DType dt : {bf16, f16, f32})
    for (int64_t n : {int64_t(1), int64_t(65535), int64_t(65537), int64_t(1) << 20,
                      (int64_t(1) << 20) + 12345}) {
      TensorType t{dt, {n}};
      std::vector<double> want = sequentialRandom(t, 11, 3);
      for (unsigned threads : {0u, 1u, 3u}) {
        INFO(dtypeName(dt) << " " << n << " on " << threads << " threads");
        CHECK(randomTensor(t, 11, 3, threads).data == want);
      }
    }
}
