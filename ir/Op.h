#pragma once
/// OpKind and its static properties, all expanded from ir/Ops.def.
#include <cstdint>
#include <optional>
#include <string_view>

namespace kfuse {

enum class OpKind : uint8_t {
#define KF_OP(E, name, arity, cls) E,
#include "ir/Ops.def"
};

/// Source: graph inputs. Unary/Binary/Cast: elementwise. Contraction: matmul. Reduction:
/// sum, mean, amax, amin over some axes (ir/Reduction.h).
enum class OpClass : uint8_t { Source, Unary, Binary, Cast, Contraction, Reduction };

std::string_view opName(OpKind k);
unsigned opArity(OpKind k);
OpClass opClass(OpKind k);
std::optional<OpKind> parseOpKind(std::string_view text);

inline bool isElementwise(OpKind k) {
  OpClass c = opClass(k);
  return c == OpClass::Unary || c == OpClass::Binary || c == OpClass::Cast;
}

inline bool isReduction(OpKind k) { return opClass(k) == OpClass::Reduction; }

} // namespace kfuse
