#pragma once
/// The builder API: free functions and operators on Value that read like the math.
///
///   kfuse::Graph g("mlp");
///   auto x = g.input("x", kfuse::bf16, {64, 4096});
///   auto w = g.input("w", kfuse::bf16, {11008, 4096});
///   auto b = g.input("b", kfuse::bf16, {11008});
///   g.output(gelu_tanh(matmul(x, w, {.transB = true}) + b));
///
/// Every function infers the result type and throws kfuse::Error naming the op and the
/// shapes or dtypes when they do not fit. One function per op, expanded from ir/Ops.def;
/// the composites (softmax, rms_norm, layer_norm, ...) are in ir/Composites.h, included here.
#include "ir/Composites.h"
#include "ir/Graph.h"

namespace kfuse {

#define KF_API_Source(E, name)
#define KF_API_Cast(E, name)
#define KF_API_Contraction(E, name)
#define KF_API_Reduction(E, name)                                                              \
  inline Value name(Value a, IntList axes, bool keepdims = false) {                            \
    return a.graph().reduce(OpKind::E, a, std::move(axes), keepdims);                          \
  }
#define KF_API_Unary(E, name)                                                                  \
  inline Value name(Value a) { return a.graph().unary(OpKind::E, a); }
#define KF_API_Binary(E, name)                                                                 \
  inline Value name(Value a, Value b) { return a.graph().binary(OpKind::E, a.node(), b.node()); } \
  inline Value name(Value a, double b) {                                                       \
    return a.graph().binary(OpKind::E, a.node(), Operand::literal(b));                         \
  }                                                                                            \
  inline Value name(double a, Value b) {                                                       \
    return b.graph().binary(OpKind::E, Operand::literal(a), b.node());                         \
  }
#define KF_OP(E, name, arity, cls) KF_API_##cls(E, name)
#include "ir/Ops.def"
#undef KF_API_Source
#undef KF_API_Cast
#undef KF_API_Contraction
#undef KF_API_Reduction
#undef KF_API_Unary
#undef KF_API_Binary

inline Value cast(Value a, DType to) { return a.graph().cast(a, to); }
inline Value matmul(Value a, Value b, MatMulAttrs attrs = {}) {
  return a.graph().matmul(a, b, attrs);
}

inline Value operator+(Value a, Value b) { return add(a, b); }
inline Value operator+(Value a, double b) { return add(a, b); }
inline Value operator+(double a, Value b) { return add(a, b); }
inline Value operator-(Value a, Value b) { return sub(a, b); }
inline Value operator-(Value a, double b) { return sub(a, b); }
inline Value operator-(double a, Value b) { return sub(a, b); }
inline Value operator*(Value a, Value b) { return mul(a, b); }
inline Value operator*(Value a, double b) { return mul(a, b); }
inline Value operator*(double a, Value b) { return mul(a, b); }
inline Value operator/(Value a, Value b) { return div(a, b); }
inline Value operator/(Value a, double b) { return div(a, b); }
inline Value operator/(double a, Value b) { return div(a, b); }
inline Value operator-(Value a) { return neg(a); }

} // namespace kfuse
