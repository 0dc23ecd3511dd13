#include "ir/Op.h"

#include <cstdint>

namespace kfuse {

namespace {
struct OpInfo {
  std::string_view name;
  unsigned arity;
  OpClass cls;
};
constexpr OpInfo opInfos[] = {
#define KF_OP(E, name, arity, cls) {#name, arity, OpClass::cls},
#include "ir/Ops.def"
};
} // namespace

std::string_view opName(OpKind k) { return opInfos[static_cast<unsigned>(k)].name; }
unsigned opArity(OpKind k) { return opInfos[static_cast<unsigned>(k)].arity; }
OpClass opClass(OpKind k) { return opInfos[static_cast<unsigned>(k)].cls; }

std::optional<OpKind> parseOpKind(std::string_view text) {
  for (unsigned i = 0; i < std::size(opInfos); ++i)
    if (opInfos[i].name == text)
      return static_cast<OpKind>(i);
  return std::nullopt;
}

} // namespace kfuse
