#include "ir/Reduction.h"

#include "ir/Error.h"
#include "ir/Graph.h"

#include <limits>

namespace kfuse {

AxisMask reductionMask(OpKind k, const TensorType &in, const IntList &axes) {
  std::string_view op = opName(k);
  int64_t rank = static_cast<int64_t>(in.rank());
  if (axes.empty())
    fail("{}: axes=[] names no axis to reduce (operand {})", op, in.str());
  if (rank == 0)
    fail("{}: operand {} is a scalar (rank 0): it has no axis to reduce", op, in.str());
  AxisMask mask(in.rank(), false);
  for (int64_t a : axes) {
    int64_t d = a < 0 ? a + rank : a;
    if (d < 0 || d >= rank)
      fail("{}: axis {} is out of range for operand {} (rank {}: axes -{}..{})", op, a, in.str(),
           rank, rank, rank - 1);
    if (mask[d])
      fail("{}: axis {} is named twice in axes={} (operand {})", op, d, AttrValue(axes).str(),
           in.str());
    mask[d] = true;
  }
  if (k == OpKind::Amax || k == OpKind::Amin)
    for (int64_t d = 0; d < rank; ++d)
      if (mask[d] && in.shape[d] == 0)
        fail("{}: axis {} of operand {} is empty, and {} of no element is undefined", op, d,
             in.str(), op);
  return mask;
}

Shape reducedShape(llvm::ArrayRef<int64_t> in, llvm::ArrayRef<bool> mask, bool keepdims) {
  Shape out;
  for (size_t d = 0; d < in.size(); ++d)
    if (!mask[d])
      out.push_back(in[d]);
    else if (keepdims)
      out.push_back(1);
  return out;
}

AxisMask reductionMask(const Node *n) {
  return reductionMask(n->kind(), n->operand(0).node->type(), n->attrs().getInts(Attr::Axes));
}

double reductionIdentity(OpKind k) {
  switch (k) {
  case OpKind::Amax:
    return -std::numeric_limits<double>::infinity();
  case OpKind::Amin:
    return std::numeric_limits<double>::infinity();
  default:
    return 0.0;
  }
}

} // namespace kfuse
