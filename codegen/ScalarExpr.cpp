#include "codegen/ScalarExpr.h"

#include "ir/Error.h"

#include <cmath>
#include <fmt/format.h>

namespace kfuse::codegen {

const char *storageType(DType t) { return t == DType::F32 ? "float" : "unsigned short"; }

std::string loadExpr(DType t, const std::string &raw) {
  switch (t) {
  case DType::F32:
    return raw;
  case DType::F16:
    return fmt::format("kf_h2f({})", raw);
  case DType::BF16:
    return fmt::format("kf_bf2f({})", raw);
  }
  return raw;
}

std::string storeExpr(DType t, const std::string &v) {
  switch (t) {
  case DType::F32:
    return v;
  case DType::F16:
    return fmt::format("kf_f2h({})", v);
  case DType::BF16:
    return fmt::format("kf_f2bf({})", v);
  }
  return v;
}

std::string floatLiteral(float f) {
  if (std::isnan(f))
    return "kf_nan()";
  if (std::isinf(f))
    return f > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  std::string s = fmt::format("{:.9g}", f);
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s + "f";
}

const char *vecType(size_t bytes) {
  return bytes >= 16  ? "uint4"
         : bytes == 8 ? "uint2"
         : bytes == 4 ? "unsigned"
                      : "unsigned short";
}

/// x^e: by multiplies where e is a small integer literal (GPT-2's gelu_new spells x^3 as
/// pow(x, 3.0), and powf's code, inlined per element of a GEMM epilogue, tripled its
/// time); they agree with pow on NaN, infinities and signed zeros. Anything else: powf.
static bool powByMultiplies(const SpecOp &op) {
  if (op.args[1].kind != SpecRef::Literal)
    return false;
  const float e = op.args[1].literal;
  return e == 0.0f || e == 1.0f || e == 2.0f || e == 3.0f || e == 4.0f || e == -1.0f;
}
static std::string powExpr(const SpecOp &op, const std::vector<std::string> &a) {
  if (powByMultiplies(op)) {
    const float e = op.args[1].literal;
    const std::string &x = a[0];
    if (e == 0.0f)
      return "1.0f"; // pow(x, 0) is 1, also for NaN
    if (e == 1.0f)
      return x;
    if (e == 2.0f)
      return fmt::format("({0} * {0})", x);
    if (e == 3.0f)
      return fmt::format("({0} * {0} * {0})", x);
    if (e == 4.0f)
      return fmt::format("(({0} * {0}) * ({0} * {0}))", x);
    if (e == -1.0f)
      return fmt::format("(1.0f / {})", x);
  }
  return fmt::format("powf({}, {})", a[0], a[1]);
}

std::string opExpr(const SpecOp &op, const std::vector<std::string> &a,
                   const std::string &kernel) {
  switch (op.kind) {
  case OpKind::Neg:
    return fmt::format("-{}", a[0]);
  case OpKind::Abs:
    return fmt::format("fabsf({})", a[0]);
  case OpKind::Exp:
    // An f16/bf16 exp takes the fast exp (ex2.approx of x * log2(e): 2 instructions instead
    // of about 10, which made softmax over 16-bit rows issue-bound): its error, (2 + 1.16|x|)
    // ulp of f32, at most 2e-5 relative where the result is finite, stays far below the
    // 16-bit result's own rounding (2^-9 for bf16, 2^-11 for f16), which the error bound
    // (ir/ErrorBound.h) already grants the op. f32 keeps expf (2 ulp).
    return (dtypeSize(op.dtype) == 2 ? "__expf(" : "expf(") + a[0] + ")";
  case OpKind::Log:
    return fmt::format("logf({})", a[0]);
  case OpKind::Sqrt:
    return fmt::format("sqrtf({})", a[0]);
  case OpKind::Rsqrt:
    return fmt::format("1.0f / sqrtf({})", a[0]);
  case OpKind::Tanh:
    return fmt::format("tanhf({})", a[0]);
  case OpKind::Sigmoid:
    return fmt::format("kf_sigmoid({})", a[0]);
  case OpKind::Relu:
    return fmt::format("kf_relu({})", a[0]);
  case OpKind::Gelu:
    return fmt::format("kf_gelu({})", a[0]);
  case OpKind::GeluTanh:
    return fmt::format("kf_gelu_tanh({})", a[0]);
  case OpKind::Silu:
    return fmt::format("kf_silu({})", a[0]);
  case OpKind::Add:
    return fmt::format("{} + {}", a[0], a[1]);
  case OpKind::Sub:
    return fmt::format("{} - {}", a[0], a[1]);
  case OpKind::Mul:
    return fmt::format("{} * {}", a[0], a[1]);
  case OpKind::Div:
    return fmt::format("{} / {}", a[0], a[1]);
  case OpKind::Max:
    return fmt::format("kf_max({}, {})", a[0], a[1]);
  case OpKind::Min:
    return fmt::format("kf_min({}, {})", a[0], a[1]);
  case OpKind::Pow:
    return powExpr(op, a);
  case OpKind::Cast:
    switch (op.dtype) {
    case DType::F32:
      return a[0];
    case DType::F16:
      return fmt::format("kf_h2f(kf_f2h({}))", a[0]);
    case DType::BF16:
      return fmt::format("kf_bf2f(kf_f2bf({}))", a[0]);
    }
    return a[0];
  default:
    fail("kernel '{}': op '{}' cannot be generated", kernel, opName(op.kind));
  }
}

unsigned opCodeWeight(const SpecOp &op) {
  switch (op.kind) {
  case OpKind::Exp:
    return dtypeSize(op.dtype) == 2 ? 6 : 20;
  case OpKind::Sigmoid:
  case OpKind::Silu:
  case OpKind::GeluTanh:
    return 6;
  case OpKind::Log:
  case OpKind::Sqrt:
  case OpKind::Rsqrt:
  case OpKind::Tanh:
  case OpKind::Gelu:
  case OpKind::Div:
    return 20;
  case OpKind::Pow: // by multiplies where powExpr writes them so, else powf
    return powByMultiplies(op) ? 2 : 40;
  default:
    return 1;
  }
}

} // namespace kfuse::codegen
