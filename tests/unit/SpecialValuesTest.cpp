// Special values per op in the reference interpreter (ir/Interpreter.h): NaN, +-Inf, -0 and
// denormals for every unary and binary op of ir/Ops.def, compared bit for bit (the sign of
// zero counts; any NaN equals any NaN). The expected values are PyTorch's (its CPU formulas:
// gelu = x/2 (1 + erf(x/sqrt 2)), silu = x / (1 + exp(-x)), ...) and C/IEEE 754 for pow,
// with the NaN rules of ARCHITECTURE.md: relu, max and min propagate NaN. Where PyTorch's
// own paths disagree (max(-0, +0) depends on argument order and on vectorisation), kfuse
// takes IEEE 754-2019 maximum/minimum: -0 < +0, so max(-0, +0) = +0 in either order, and
// relu(x) = maximum(x, +0), so relu(-0) = +0 (torch's CPU relu returns -0). The values that
// differ from live PyTorch on purpose are listed with their reasons in
// bench/probe/specials_vs_torch.cpp (bench/results/differential.md).
// Also: rounding to f16/bf16 of -0, denormals, ties and overflow (ir/DType.h).
#include "ir/DType.h"
#include "ir/Interpreter.h"
#include "ir/Op.h"

#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <fmt/format.h>
#include <limits>
#include <set>

using namespace kfuse;

namespace {

constexpr double NaN = std::numeric_limits<double>::quiet_NaN();
constexpr double Inf = std::numeric_limits<double>::infinity();
constexpr double Den = 1e-40; // an f32 denormal (exact in float64)

bool sameBits(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b);
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

struct U {
  OpKind op;
  double x, want;
};
struct B {
  OpKind op;
  double a, b, want;
};

// clang-format off
const U unaryCases[] = {
  {OpKind::Neg, NaN, NaN}, {OpKind::Neg, Inf, -Inf}, {OpKind::Neg, -Inf, Inf},
  {OpKind::Neg, 0.0, -0.0}, {OpKind::Neg, -0.0, 0.0}, {OpKind::Neg, Den, -Den},
  {OpKind::Abs, NaN, NaN}, {OpKind::Abs, -Inf, Inf}, {OpKind::Abs, -0.0, 0.0},
  {OpKind::Abs, -Den, Den},
  {OpKind::Exp, NaN, NaN}, {OpKind::Exp, Inf, Inf}, {OpKind::Exp, -Inf, 0.0},
  {OpKind::Exp, -0.0, 1.0}, {OpKind::Exp, Den, 1.0}, {OpKind::Exp, -1000.0, 0.0},
  {OpKind::Log, NaN, NaN}, {OpKind::Log, Inf, Inf}, {OpKind::Log, -Inf, NaN},
  {OpKind::Log, 0.0, -Inf}, {OpKind::Log, -0.0, -Inf}, {OpKind::Log, -1.0, NaN},
  {OpKind::Log, 1.0, 0.0}, {OpKind::Log, Den, std::log(Den)},
  {OpKind::Sqrt, NaN, NaN}, {OpKind::Sqrt, Inf, Inf}, {OpKind::Sqrt, -Inf, NaN},
  {OpKind::Sqrt, 0.0, 0.0}, {OpKind::Sqrt, -0.0, -0.0}, {OpKind::Sqrt, -1.0, NaN},
  {OpKind::Sqrt, Den, std::sqrt(Den)},
  {OpKind::Rsqrt, NaN, NaN}, {OpKind::Rsqrt, Inf, 0.0}, {OpKind::Rsqrt, -Inf, NaN},
  {OpKind::Rsqrt, 0.0, Inf}, {OpKind::Rsqrt, -0.0, -Inf}, {OpKind::Rsqrt, -1.0, NaN},
  {OpKind::Tanh, NaN, NaN}, {OpKind::Tanh, Inf, 1.0}, {OpKind::Tanh, -Inf, -1.0},
  {OpKind::Tanh, -0.0, -0.0}, {OpKind::Tanh, Den, Den},
  {OpKind::Sigmoid, NaN, NaN}, {OpKind::Sigmoid, Inf, 1.0}, {OpKind::Sigmoid, -Inf, 0.0},
  {OpKind::Sigmoid, -0.0, 0.5}, {OpKind::Sigmoid, -1000.0, 0.0},
  {OpKind::Relu, NaN, NaN}, {OpKind::Relu, Inf, Inf}, {OpKind::Relu, -Inf, 0.0},
  {OpKind::Relu, -0.0, 0.0}, {OpKind::Relu, 0.0, 0.0}, {OpKind::Relu, Den, Den},
  {OpKind::Relu, -Den, 0.0},
  {OpKind::Gelu, NaN, NaN}, {OpKind::Gelu, Inf, Inf}, {OpKind::Gelu, -Inf, NaN},
  {OpKind::Gelu, -0.0, -0.0}, {OpKind::Gelu, 0.0, 0.0},
  {OpKind::GeluTanh, NaN, NaN}, {OpKind::GeluTanh, Inf, Inf}, {OpKind::GeluTanh, -Inf, NaN},
  {OpKind::GeluTanh, -0.0, -0.0},
  {OpKind::Silu, NaN, NaN}, {OpKind::Silu, Inf, Inf}, {OpKind::Silu, -Inf, NaN},
  {OpKind::Silu, -0.0, -0.0}, {OpKind::Silu, -1000.0, -0.0},
};

const B binaryCases[] = {
  {OpKind::Add, NaN, 1.0, NaN}, {OpKind::Add, 1.0, NaN, NaN}, {OpKind::Add, Inf, -Inf, NaN},
  {OpKind::Add, Inf, 1.0, Inf}, {OpKind::Add, -0.0, -0.0, -0.0}, {OpKind::Add, -0.0, 0.0, 0.0},
  {OpKind::Add, 0.0, -0.0, 0.0}, {OpKind::Add, Den, -Den, 0.0}, {OpKind::Add, Den, Den, 2 * Den},
  {OpKind::Sub, Inf, Inf, NaN}, {OpKind::Sub, -0.0, 0.0, -0.0}, {OpKind::Sub, 0.0, 0.0, 0.0},
  {OpKind::Sub, NaN, NaN, NaN}, {OpKind::Sub, -Inf, Inf, -Inf},
  {OpKind::Mul, 0.0, Inf, NaN}, {OpKind::Mul, -0.0, 1.0, -0.0}, {OpKind::Mul, -0.0, -1.0, 0.0},
  {OpKind::Mul, Inf, -2.0, -Inf}, {OpKind::Mul, NaN, 0.0, NaN}, {OpKind::Mul, Den, 0.5, Den / 2},
  {OpKind::Div, 1.0, 0.0, Inf}, {OpKind::Div, 1.0, -0.0, -Inf}, {OpKind::Div, -1.0, 0.0, -Inf},
  {OpKind::Div, 0.0, 0.0, NaN}, {OpKind::Div, Inf, Inf, NaN}, {OpKind::Div, 1.0, Inf, 0.0},
  {OpKind::Div, -1.0, Inf, -0.0}, {OpKind::Div, NaN, 1.0, NaN}, {OpKind::Div, 1.0, Den, 1.0 / Den},
  {OpKind::Max, NaN, 1.0, NaN}, {OpKind::Max, 1.0, NaN, NaN}, {OpKind::Max, NaN, Inf, NaN},
  {OpKind::Max, -Inf, Inf, Inf}, {OpKind::Max, -0.0, 0.0, 0.0}, {OpKind::Max, 0.0, -0.0, 0.0},
  {OpKind::Max, -Den, 0.0, 0.0}, {OpKind::Max, Den, 0.0, Den},
  {OpKind::Min, NaN, 1.0, NaN}, {OpKind::Min, 1.0, NaN, NaN}, {OpKind::Min, NaN, -Inf, NaN},
  {OpKind::Min, -Inf, Inf, -Inf}, {OpKind::Min, -0.0, 0.0, -0.0}, {OpKind::Min, 0.0, -0.0, -0.0},
  {OpKind::Min, -Den, 0.0, -Den},
  // pow: C99 / IEEE 754 pow, which torch.pow follows.
  {OpKind::Pow, NaN, 0.0, 1.0}, {OpKind::Pow, NaN, -0.0, 1.0}, {OpKind::Pow, 1.0, NaN, 1.0},
  {OpKind::Pow, NaN, 1.0, NaN}, {OpKind::Pow, 2.0, NaN, NaN}, {OpKind::Pow, -1.0, Inf, 1.0},
  {OpKind::Pow, -1.0, -Inf, 1.0}, {OpKind::Pow, 0.0, -1.0, Inf}, {OpKind::Pow, -0.0, -1.0, -Inf},
  {OpKind::Pow, -0.0, -2.0, Inf}, {OpKind::Pow, -0.0, 3.0, -0.0}, {OpKind::Pow, -0.0, 0.5, 0.0},
  {OpKind::Pow, -8.0, 1.0 / 3.0, NaN}, {OpKind::Pow, -2.0, 3.0, -8.0}, {OpKind::Pow, -Inf, 3.0, -Inf},
  {OpKind::Pow, -Inf, -3.0, -0.0}, {OpKind::Pow, -Inf, 2.0, Inf}, {OpKind::Pow, 0.5, Inf, 0.0},
  {OpKind::Pow, 2.0, -Inf, 0.0}, {OpKind::Pow, 2.0, Inf, Inf}, {OpKind::Pow, Inf, -1.0, 0.0},
  {OpKind::Pow, 0.0, 0.0, 1.0}, {OpKind::Pow, Inf, 0.0, 1.0}, {OpKind::Pow, Den, 0.5, std::sqrt(Den)},
};
// clang-format on

std::string show(double v) { return v == 0 && std::signbit(v) ? "-0" : fmt::format("{}", v); }

} // namespace

TEST_CASE("special values: every unary op on NaN, +-Inf, -0 and denormals",
          "[interpret][special]") {
  std::set<OpKind> covered;
  int passed = 0;
  for (const U &c : unaryCases) {
    double got = evalUnary(c.op, c.x);
    INFO(opName(c.op) << "(" << show(c.x) << ") = " << show(got) << ", expected " << show(c.want));
    CHECK(sameBits(got, c.want));
    passed += sameBits(got, c.want);
    covered.insert(c.op);
  }
  for (int k = 0; k < int(OpKind::MatMul) + 1; ++k)
    if (opClass(OpKind(k)) == OpClass::Unary) {
      INFO("unary op without special cases: " << opName(OpKind(k)));
      CHECK(covered.count(OpKind(k)));
    }
  std::printf("special values, unary: %d of %zu cases as expected\n", passed,
              std::size(unaryCases));
}

TEST_CASE("special values: every binary op on NaN, +-Inf, -0 and denormals",
          "[interpret][special]") {
  std::set<OpKind> covered;
  int passed = 0;
  for (const B &c : binaryCases) {
    double got = evalBinary(c.op, c.a, c.b);
    INFO(opName(c.op) << "(" << show(c.a) << ", " << show(c.b) << ") = " << show(got)
                      << ", expected " << show(c.want));
    CHECK(sameBits(got, c.want));
    passed += sameBits(got, c.want);
    covered.insert(c.op);
  }
  for (int k = 0; k < int(OpKind::MatMul) + 1; ++k)
    if (opClass(OpKind(k)) == OpClass::Binary) {
      INFO("binary op without special cases: " << opName(OpKind(k)));
      CHECK(covered.count(OpKind(k)));
    }
  std::printf("special values, binary: %d of %zu cases as expected\n", passed,
              std::size(binaryCases));
}

TEST_CASE("special values: f16 and bf16 rounding of -0, denormals, ties and overflow",
          "[interpret][special][dtype]") {
  auto h = [](double v) { return floatToHalfBits(static_cast<float>(v)); };
  auto b = [](double v) { return floatToBF16Bits(static_cast<float>(v)); };
  CHECK(h(-0.0) == 0x8000);
  CHECK(b(-0.0) == 0x8000);
  CHECK(sameBits(roundToDType(-0.0, DType::F16), -0.0));
  CHECK(sameBits(roundToDType(-0.0, DType::BF16), -0.0));
  CHECK(sameBits(roundToDType(-1e-10, DType::F16), -0.0)); // underflows, keeps its sign
  CHECK(h(0x1p-24) == 0x0001);                             // smallest f16 denormal
  CHECK(h(0x1p-25) == 0x0000);                             // tie: to even (zero)
  CHECK(h(0x1.8p-24) == 0x0002);                           // tie: to even (two)
  CHECK(h(3e-8) == 0x0001);
  CHECK(h(0x1p-14) == 0x0400);     // smallest normal
  CHECK(h(0x1.ff8p-15) == 0x03ff); // the largest denormal
  CHECK(h(0x1.ffcp-15) == 0x0400); // a tie above it rounds (to even) into the normals
  CHECK(halfBitsToFloat(0x0001) == 0x1p-24f);
  CHECK(halfBitsToFloat(0x8001) == -0x1p-24f);
  CHECK(h(65504.0) == 0x7bff);
  CHECK(h(65519.0) == 0x7bff);
  CHECK(h(65520.0) == 0x7c00); // ties to even: overflows to Inf
  CHECK(h(-1e6) == 0xfc00);
  CHECK((h(NaN) & 0x7c00) == 0x7c00);
  CHECK((h(NaN) & 0x3ff) != 0);
  CHECK(b(1e-40) == 0x0001); // bf16 keeps f32's exponent range: denormals survive
  CHECK(bf16BitsToFloat(0x0001) == std::bit_cast<float>(0x00010000u));
  CHECK(b(std::bit_cast<float>(0x00018000u)) == 0x0002); // tie to even, up
  CHECK(b(std::bit_cast<float>(0x00028000u)) == 0x0002); // tie to even, down
  CHECK(b(3.4e38) == 0x7f80);                            // above bf16's max: Inf
  CHECK(b(1.00390625) == 0x3f80);                        // tie: to even (1.0)
  CHECK(b(1.01171875) == 0x3f82);                        // tie: to even (up)
  CHECK(std::isnan(bf16BitsToFloat(b(NaN))));
  CHECK(std::isnan(bf16BitsToFloat(b(std::bit_cast<float>(0x7f800001u))))); // signalling stays NaN
  CHECK(sameBits(roundToDType(Den, DType::F32), double(static_cast<float>(Den))));
  CHECK(roundToDType(Den, DType::F32) != 0.0); // no flush to zero on the host
}
