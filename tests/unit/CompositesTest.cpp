// The composites of ir/Composites.h: their expansion (the ops PyTorch and Hugging Face
// spell), their numbers on the interpreter against hand-computed and naive float64 values
// (NaN rows, a row of -inf, N = 1, large logits), and their errors (naming the function
// and the shapes, leaving the graph as it was).
#include "ir/Builder.h"
#include "ir/DType.h"
#include "ir/Error.h"
#include "ir/Interpreter.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

using namespace kfuse;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

Tensor tensor(DType dt, Shape shape, std::vector<double> values) {
  return Tensor(TensorType{dt, std::move(shape)}, std::move(values));
}

/// NaN must match NaN, infinities must be equal, else relative error <= tol.
void checkClose(const Tensor &got, const std::vector<double> &want, double tol = 1e-6) {
  REQUIRE(got.data.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i << ": got " << got.data[i] << ", want " << want[i]);
    if (std::isnan(want[i]))
      CHECK(std::isnan(got.data[i]));
    else if (got.data[i] != want[i])
      CHECK(std::fabs(got.data[i] - want[i]) <= tol * std::max(1.0, std::fabs(want[i])));
  }
}

/// Rows of `cols` elements, each mapped by `f` (a naive float64 reference per row).
template <typename F>
std::vector<double> perRow(const std::vector<double> &x, size_t cols, F f) {
  std::vector<double> out;
  for (size_t r = 0; r * cols < x.size(); ++r) {
    std::vector<double> row(x.begin() + r * cols, x.begin() + (r + 1) * cols);
    std::vector<double> y = f(row);
    out.insert(out.end(), y.begin(), y.end());
  }
  return out;
}

std::vector<double> naiveSoftmax(const std::vector<double> &row) {
  double m = -kInf;
  bool nan = false;
  for (double v : row) {
    nan |= std::isnan(v);
    m = std::max(m, v);
  }
  double s = 0;
  for (double v : row)
    s += std::exp(v - m);
  std::vector<double> y;
  for (double v : row)
    y.push_back(nan ? kNaN : std::exp(v - m) / s);
  return y;
}

std::vector<double> naiveLayerNorm(const std::vector<double> &row, double eps) {
  double mu = 0, var = 0, n = static_cast<double>(row.size());
  for (double v : row)
    mu += v;
  mu /= n;
  for (double v : row)
    var += (v - mu) * (v - mu);
  var /= n;
  std::vector<double> y;
  for (double v : row)
    y.push_back((v - mu) * (1 / std::sqrt(var + eps)));
  return y;
}

/// The graph's one output on `in` (each input rounded to its dtype by the interpreter).
Tensor run1(const Graph &g, std::vector<Tensor> in) {
  verify(g);
  return interpret(g, in)[0];
}

} // namespace

TEST_CASE("softmax: the PyTorch spelling and its numbers", "[composites][softmax]") {
  Graph g("sm");
  auto x = g.input("x", f32, {5, 3});
  g.output(softmax(x));
  CHECK(printGraph(g) == "graph sm {\n"
                         "  %x = input f32[5, 3]\n"
                         "  %0 = amax %x, axes=[-1], keepdims=true  # f32[5, 1]\n"
                         "  %1 = sub %x, %0  # f32[5, 3]\n"
                         "  %2 = exp %1  # f32[5, 3]\n"
                         "  %3 = sum %2, axes=[-1], keepdims=true  # f32[5, 1]\n"
                         "  %4 = div %2, %3  # f32[5, 3]\n"
                         "  output %4\n"
                         "}\n");
  // Hand values, a NaN row, a row of -inf (NaN, as torch.softmax), a -inf among finite
  // values (weight 0) and logits that would overflow exp without the max.
  double l2 = std::log(2.0), l3 = std::log(3.0);
  std::vector<double> in = {0,    l2,   l3,           //
                            1,    kNaN, 2,            //
                            -kInf, -kInf, -kInf,      //
                            -kInf, 0,    0,           //
                            1000, 0,    1000};
  Tensor y = run1(g, {tensor(f32, {5, 3}, in)});
  checkClose(y, {1.0 / 6, 2.0 / 6, 3.0 / 6, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, 0, 0.5, 0.5, 0.5,
                 0, 0.5});
  checkClose(y, perRow(in, 3, naiveSoftmax));
}

TEST_CASE("softmax: other axes, N = 1, 16-bit", "[composites][softmax]") {
  Graph g("axes");
  auto x = g.input("x", f32, {2, 3});
  g.output(softmax(x, 0));
  g.output(softmax(x, -2));
  auto one = g.input("one", f32, {3, 1});
  g.output(softmax(one));
  g.output(log_softmax(one));
  auto h = g.input("h", bf16, {2, 2});
  g.output(softmax(h));
  verify(g);
  std::vector<Tensor> out =
      interpret(g, {tensor(f32, {2, 3}, {0, 1, kNaN, std::log(3.0), 1, 2}),
                    tensor(f32, {3, 1}, {5, -kInf, kNaN}), tensor(bf16, {2, 2}, {0, 0, 1, 1})});
  std::vector<double> col = {0.25, 0.5, kNaN, 0.75, 0.5, kNaN};
  checkClose(out[0], col);
  checkClose(out[1], col);
  checkClose(out[2], {1, kNaN, kNaN}); // one element: 1, but -inf - -inf is NaN
  checkClose(out[3], {0, kNaN, kNaN});
  CHECK(out[4].type.str() == "bf16[2, 2]"); // the input's dtype, f32 math inside
  checkClose(out[4], {0.5, 0.5, 0.5, 0.5}, 0);
}

TEST_CASE("log_softmax: (x - m) - log(sum(exp(x - m)))", "[composites][softmax]") {
  Graph g("lsm");
  auto x = g.input("x", f32, {4, 3});
  g.output(log_softmax(x));
  CHECK(printGraph(g) == "graph lsm {\n"
                         "  %x = input f32[4, 3]\n"
                         "  %0 = amax %x, axes=[-1], keepdims=true  # f32[4, 1]\n"
                         "  %1 = sub %x, %0  # f32[4, 3]\n"
                         "  %2 = exp %1  # f32[4, 3]\n"
                         "  %3 = sum %2, axes=[-1], keepdims=true  # f32[4, 1]\n"
                         "  %4 = log %3  # f32[4, 1]\n"
                         "  %5 = sub %1, %4  # f32[4, 3]\n"
                         "  output %5\n"
                         "}\n");
  double l2 = std::log(2.0), l3 = std::log(3.0), l6 = std::log(6.0);
  std::vector<double> in = {0, l2, l3, 1e4, 1e4, -1e4, kNaN, 0, 0, -kInf, 0, 1};
  Tensor y = run1(g, {tensor(f32, {4, 3}, in)});
  double lse = std::log(1 + std::exp(1.0));
  checkClose(y, {-l6, l2 - l6, l3 - l6, -l2, -l2, -2e4 - l2, kNaN, kNaN, kNaN, -kInf, -lse,
                 1 - lse});
  std::vector<double> want = perRow(in, 3, naiveSoftmax);
  for (double &v : want)
    v = std::log(v);
  want[5] = -2e4 - l2; // the naive form underflows: exp(-2e4) is 0 in float64
  checkClose(y, want);
}

TEST_CASE("rms_norm: Hugging Face's LlamaRMSNorm", "[composites][rmsnorm]") {
  const double eps = 1e-6, epsF = literalValue(eps);
  Graph g("rms");
  auto x = g.input("x", f32, {3, 4});
  auto w = g.input("w", f32, {4});
  g.output(rms_norm(x, w, eps));
  CHECK(printGraph(g) == "graph rms {\n"
                         "  %x = input f32[3, 4]\n"
                         "  %w = input f32[4]\n"
                         "  %0 = mul %x, %x  # f32[3, 4]\n"
                         "  %1 = mean %0, axes=[-1], keepdims=true  # f32[3, 1]\n"
                         "  %2 = add %1, 1e-06  # f32[3, 1]\n"
                         "  %3 = rsqrt %2  # f32[3, 1]\n"
                         "  %4 = mul %x, %3  # f32[3, 4]\n"
                         "  %5 = mul %w, %4  # f32[3, 4]\n"
                         "  output %5\n"
                         "}\n");
  std::vector<double> in = {1, 2, 3, 4, 0, 0, 0, 0, 1, kNaN, 1, 1};
  std::vector<double> wv = {1, 0.5, -2, 0.25};
  Tensor y = run1(g, {tensor(f32, {3, 4}, in), tensor(f32, {4}, wv)});
  double r = 1 / std::sqrt(7.5 + epsF);
  // A row of zeros stays 0 (eps keeps the rsqrt finite); a NaN spreads over its row.
  checkClose(y, {r, 2 * r * 0.5, -6 * r, r, 0, 0, 0, 0, kNaN, kNaN, kNaN, kNaN});
  // N = 1: x / sqrt(x^2 + eps), about sign(x); without a weight.
  Graph g1("rms1");
  auto x1 = g1.input("x", f32, {2, 1});
  g1.output(rms_norm(x1));
  checkClose(run1(g1, {tensor(f32, {2, 1}, {3, -0.5})}),
             {3 / std::sqrt(9 + epsF), -0.5 / std::sqrt(0.25 + epsF)});
}

TEST_CASE("rms_norm: 16-bit x is normalized in f32, cast back, then scaled",
          "[composites][rmsnorm]") {
  const double eps = 1e-5;
  Graph g("rms16");
  auto x = g.input("x", bf16, {2, 3});
  auto w = g.input("w", bf16, {3});
  g.output(rms_norm(x, w, eps));
  CHECK(printGraph(g) == "graph rms16 {\n"
                         "  %x = input bf16[2, 3]\n"
                         "  %w = input bf16[3]\n"
                         "  %0 = cast %x, to=f32  # f32[2, 3]\n"
                         "  %1 = mul %0, %0  # f32[2, 3]\n"
                         "  %2 = mean %1, axes=[-1], keepdims=true  # f32[2, 1]\n"
                         "  %3 = add %2, 1e-05  # f32[2, 1]\n"
                         "  %4 = rsqrt %3  # f32[2, 1]\n"
                         "  %5 = mul %0, %4  # f32[2, 3]\n"
                         "  %6 = cast %5, to=bf16  # bf16[2, 3]\n"
                         "  %7 = mul %w, %6  # bf16[2, 3]\n"
                         "  output %7\n"
                         "}\n");
  std::vector<double> in = {1.5, -2.25, 3.125, 0.1, 7, -0.3};
  std::vector<double> wv = {1.1, 0.9, -1.3};
  Tensor y = run1(g, {tensor(bf16, {2, 3}, in), tensor(bf16, {3}, wv)});
  // The reference rounds where the graph does: inputs, the cast back, the output.
  std::vector<double> want;
  for (int r = 0; r < 2; ++r) {
    double ms = 0;
    for (int c = 0; c < 3; ++c) {
      double v = roundToDType(in[r * 3 + c], bf16);
      ms += v * v;
    }
    double inv = 1 / std::sqrt(ms / 3 + literalValue(eps));
    for (int c = 0; c < 3; ++c) {
      double h = roundToDType(roundToDType(in[r * 3 + c], bf16) * inv, bf16);
      want.push_back(roundToDType(roundToDType(wv[c], bf16) * h, bf16));
    }
  }
  checkClose(y, want, 1e-12);
}

TEST_CASE("layer_norm: torch.nn.functional.layer_norm", "[composites][layernorm]") {
  const double eps = 1e-5, epsF = literalValue(eps);
  Graph g("ln");
  auto x = g.input("x", f32, {4, 4});
  auto w = g.input("w", f32, {4});
  auto b = g.input("b", f32, {4});
  g.output(layer_norm(x, w, b, eps));
  g.output(layer_norm(x, w, eps));
  g.output(layer_norm(x, eps));
  CHECK(printGraph(g).find("  %0 = mean %x, axes=[-1], keepdims=true  # f32[4, 1]\n"
                           "  %1 = sub %x, %0  # f32[4, 4]\n"
                           "  %2 = mul %1, %1  # f32[4, 4]\n"
                           "  %3 = mean %2, axes=[-1], keepdims=true  # f32[4, 1]\n"
                           "  %4 = add %3, 1e-05  # f32[4, 1]\n"
                           "  %5 = rsqrt %4  # f32[4, 1]\n"
                           "  %6 = mul %1, %5  # f32[4, 4]\n"
                           "  %7 = mul %6, %w  # f32[4, 4]\n"
                           "  %8 = add %7, %b  # f32[4, 4]\n") != std::string::npos);
  std::vector<double> in = {1, 2, 3, 4, 5, 5, 5, 5, -1, kNaN, 0, 1, 0.5, -3, 8, 2};
  std::vector<double> wv = {2, -1, 0.5, 1}, bv = {0.1, 0.2, -0.3, 0};
  verify(g);
  std::vector<Tensor> out = interpret(
      g, {tensor(f32, {4, 4}, in), tensor(f32, {4}, wv), tensor(f32, {4}, bv)});
  std::vector<double> norm = perRow(in, 4, [&](auto &r) { return naiveLayerNorm(r, epsF); });
  double s = 1 / std::sqrt(1.25 + epsF);
  // Hand values of the first row; a constant row normalizes to 0 (then b); NaN spreads.
  checkClose(out[2], {-1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s, 0, 0, 0, 0, kNaN, kNaN, kNaN, kNaN,
                      norm[12], norm[13], norm[14], norm[15]});
  checkClose(out[2], norm);
  std::vector<double> scaled = norm, affine = norm;
  for (size_t i = 0; i < norm.size(); ++i) {
    scaled[i] = norm[i] * wv[i % 4];
    affine[i] = scaled[i] + bv[i % 4];
  }
  checkClose(out[1], scaled);
  checkClose(out[0], affine);
  // A shift without a scale (the LayerNormOptions form), against the same numbers.
  Graph gb("lnb");
  auto xb = gb.input("x", f32, {4, 4});
  auto bb = gb.input("b", f32, {4});
  gb.output(layer_norm(xb, {.b = bb, .eps = eps}));
  CHECK(gb.outputs()[0]->kind() == OpKind::Add);
  std::vector<double> shifted = norm;
  for (size_t i = 0; i < norm.size(); ++i)
    shifted[i] += bv[i % 4];
  checkClose(run1(gb, {tensor(f32, {4, 4}, in), tensor(f32, {4}, bv)}), shifted);
  CHECK(out[0].data[4] == roundToDType(bv[0], f32)); // a constant row gives the bias exactly

  // N = 1: every row is its own mean: 0 * rsqrt(eps) + b.
  Graph g1("ln1");
  auto x1 = g1.input("x", f32, {3, 1});
  auto w1 = g1.input("w", f32, {1});
  auto b1 = g1.input("b", f32, {1});
  g1.output(layer_norm(x1, w1, b1));
  checkClose(run1(g1, {tensor(f32, {3, 1}, {7, -2, kNaN}), tensor(f32, {1}, {3}),
                       tensor(f32, {1}, {0.5})}),
             {0.5, 0.5, kNaN});
}

TEST_CASE("layer_norm: 16-bit x, w and b are computed in f32 and cast back once",
          "[composites][layernorm]") {
  Graph g("ln16");
  auto x = g.input("x", f16, {2, 3});
  auto w = g.input("w", f16, {3});
  auto b = g.input("b", f16, {3});
  g.output(layer_norm(x, w, b));
  std::string text = printGraph(g);
  CHECK(text.find("%0 = cast %x, to=f32") != std::string::npos);
  CHECK(text.find("cast %w, to=f32") != std::string::npos);
  CHECK(text.find("cast %b, to=f32") != std::string::npos);
  CHECK(g.outputs()[0]->kind() == OpKind::Cast);
  CHECK(g.outputs()[0]->type().str() == "f16[2, 3]");
  size_t casts = 0;
  for (const Node *n : g.nodes())
    casts += n->kind() == OpKind::Cast;
  CHECK(casts == 4);
  std::vector<double> in = {0.1, 0.2, 0.4, -5, 5, 1}, wv = {1, 2, 3}, bv = {0, 1, -1};
  Tensor y = run1(g, {tensor(f16, {2, 3}, in), tensor(f16, {3}, wv), tensor(f16, {3}, bv)});
  std::vector<double> r;
  for (double v : in)
    r.push_back(roundToDType(v, f16));
  std::vector<double> want =
      perRow(r, 3, [](auto &row) { return naiveLayerNorm(row, literalValue(1e-5)); });
  for (size_t i = 0; i < want.size(); ++i)
    want[i] = roundToDType(want[i] * wv[i % 3] + bv[i % 3], f16);
  checkClose(y, want, 1e-12);
}

TEST_CASE("var_mean: torch.var_mean with correction and keepdims", "[composites][varmean]") {
  Graph g("vm");
  auto x = g.input("x", f32, {2, 3});
  auto [v1, m1] = var_mean(x, {-1});
  auto [v0, m0] = var_mean(x, {-1}, 0, true);
  auto [va, ma] = var_mean(x, {0, 1});
  auto [vc, mc] = var_mean(x, {0}, 2); // N = 2, correction 2: divisor 0
  for (Value v : {v1, m1, v0, m0, va, ma, vc, mc})
    g.output(v);
  verify(g);
  CHECK(v1.type().str() == "f32[2]");
  CHECK(m1.type().str() == "f32[2]");
  CHECK(v0.type().str() == "f32[2, 1]");
  CHECK(m0.type().str() == "f32[2, 1]");
  CHECK(va.type().str() == "f32[]");
  std::vector<Tensor> out = interpret(g, {tensor(f32, {2, 3}, {1, 2, 3, 4, kNaN, 4})});
  checkClose(out[0], {1, kNaN});           // (1 + 0 + 1) / 2
  checkClose(out[1], {2, kNaN});
  checkClose(out[2], {2.0 / 3, kNaN});     // population variance
  checkClose(out[3], {2, kNaN});
  checkClose(out[4], {kNaN});
  checkClose(out[5], {kNaN});
  checkClose(out[6], {kInf, kNaN, kInf}); // 4.5/0, NaN, 0.5/0
  checkClose(out[7], {2.5, kNaN, 3.5});

  // Hand values without NaN; N = 1 with correction 1 is 0/0 = NaN, as in PyTorch.
  Graph h("vm2");
  auto y = h.input("y", f32, {3, 1});
  auto [vy, my] = var_mean(y, {0, 1});
  auto [vn, mn] = var_mean(y, {1});
  for (Value v : {vy, my, vn, mn})
    h.output(v);
  out = interpret(h, {tensor(f32, {3, 1}, {1, 4, 10})});
  checkClose(out[0], {21});
  checkClose(out[1], {5});
  checkClose(out[2], {kNaN, kNaN, kNaN});
  checkClose(out[3], {1, 4, 10});

  // 16-bit: computed in f32, both results cast back.
  Graph b("vm16");
  auto z = b.input("z", bf16, {4});
  auto [vz, mz] = var_mean(z, {0});
  CHECK(vz->kind() == OpKind::Cast);
  CHECK(mz->kind() == OpKind::Cast);
  CHECK(vz.type().str() == "bf16[]");
  b.output(vz);
  b.output(mz);
  out = interpret(b, {tensor(bf16, {4}, {1, 2, 3, 4})});
  checkClose(out[0], {roundToDType(5.0 / 3, bf16)}, 0);
  checkClose(out[1], {2.5}, 0);
}

TEST_CASE("composites: errors name the function and the shapes and change nothing",
          "[composites][errors]") {
  Graph g("bad");
  auto x = g.input("x", f32, {4, 8});
  auto s = g.input("s", f32, {});
  auto e = g.input("e", f32, {4, 0});
  auto w7 = g.input("w7", f32, {7});
  auto w2 = g.input("w2", f32, {1, 8});
  auto wh = g.input("wh", bf16, {8});
  auto w8 = g.input("w8", f32, {8});
  Graph other("other");
  auto wo = other.input("wo", f32, {8});
  size_t before = g.numNodes();
  using Catch::Matchers::Equals;
  CHECK_THROWS_WITH(softmax(x, 2),
                    Equals("softmax: axis 2 is out of range for operand f32[4, 8] (rank 2: axes "
                           "-2..1)"));
  CHECK_THROWS_WITH(log_softmax(x, -3), Catch::StartsWith("log_softmax: axis -3 is out of range"));
  CHECK_THROWS_WITH(softmax(s), Equals("softmax: x f32[] has no axis to reduce (rank 0)"));
  CHECK_THROWS_WITH(softmax(e),
                    Equals("softmax: axis 1 of operand f32[4, 0] is empty, and amax of no "
                           "element is undefined"));
  CHECK_THROWS_WITH(rms_norm(x, w7),
                    Equals("rms_norm: w f32[7] must be [8], the last dim of x f32[4, 8]"));
  CHECK_THROWS_WITH(rms_norm(x, w2),
                    Equals("rms_norm: w f32[1, 8] must be [8], the last dim of x f32[4, 8]"));
  CHECK_THROWS_WITH(rms_norm(x, wh),
                    Equals("rms_norm: w bf16[8] must have x's dtype f32 (x f32[4, 8]); cast it"));
  CHECK_THROWS_WITH(rms_norm(x, wo), Catch::StartsWith("rms_norm: w belongs to another graph"));
  CHECK_THROWS_WITH(rms_norm(s), Equals("rms_norm: x f32[] has no last axis to normalize over "
                                        "(rank 0)"));
  CHECK_THROWS_WITH(rms_norm(x, w8, -1.0), Catch::StartsWith("rms_norm: eps must be"));
  CHECK_THROWS_WITH(rms_norm(x, w8, kNaN), Catch::StartsWith("rms_norm: eps must be"));
  CHECK_THROWS_WITH(layer_norm(x, w8, w7),
                    Equals("layer_norm: b f32[7] must be [8], the last dim of x f32[4, 8]"));
  CHECK_THROWS_WITH(layer_norm(x, w7), Catch::StartsWith("layer_norm: w f32[7] must be [8]"));
  CHECK_THROWS_WITH(layer_norm(x, 1e39), Catch::StartsWith("layer_norm: eps must be"));
  CHECK_THROWS_WITH(var_mean(x, {2}),
                    Equals("var_mean: axis 2 is out of range for operand f32[4, 8] (rank 2: axes "
                           "-2..1)"));
  CHECK_THROWS_WITH(var_mean(x, {1, -1}), Catch::StartsWith("var_mean: axis 1 is named twice"));
  CHECK_THROWS_WITH(var_mean(x, {}), Catch::StartsWith("var_mean: axes=[] names no axis"));
  CHECK_THROWS_WITH(var_mean(x, {0}, kInf), Catch::StartsWith("var_mean: correction must be"));
  // An empty axis between huge ones: the reduced shape [2^40, 1, 2^40] is past 2^48
  // elements; the 16-bit form would cast first, so the check must come before any node.
  auto huge = g.input("huge", bf16, {int64_t(1) << 40, 0, int64_t(1) << 40});
  before = g.numNodes();
  const char *tooMany = "shape [1099511627776, 1, 1099511627776] has more than 2^48 elements";
  CHECK_THROWS_WITH(var_mean(huge, {1}), Equals(std::string("var_mean: ") + tooMany));
  CHECK_THROWS_WITH(sum(huge, {1}),
                    Catch::StartsWith("sum: shape [1099511627776, 1099511627776] has more"));
  CHECK(g.numNodes() == before); // nothing was added by a refused call
  // Empty rows are fine where the reduction allows them (mean of nothing is NaN, no element
  // is produced), and the graph still verifies.
  g.output(rms_norm(e));
  g.output(layer_norm(e));
  g.output(var_mean(e, {1}).first);
  verify(g);
}
