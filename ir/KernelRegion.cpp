#include "ir/KernelRegion.h"

#include <fmt/format.h>

namespace kfuse {

RegionSummary RegionSummary::of(const Node *n) {
  RegionSummary r;
  r.shape = n->shape();
  if (n->kind() == OpKind::MatMul) {
    r.kind = RegionKind::Gemm;
    r.anchor = n;
  }
  return r;
}

FusionDecision canJoin(const RegionSummary &a, const RegionSummary &b, const Node *consumer) {
  if (a.kind == RegionKind::Gemm && b.kind == RegionKind::Gemm)
    return FusionDecision::forbid("a matmul never fuses into another matmul kernel");
  const RegionSummary *gemm = a.kind == RegionKind::Gemm ? &a : b.kind == RegionKind::Gemm ? &b : nullptr;
  if (gemm && a.shape != b.shape) {
    const RegionSummary &other = gemm == &a ? b : a;
    return FusionDecision::forbid(fmt::format(
        "a matmul epilogue must have the matmul's shape {}, {} is {}", shapeToString(gemm->shape),
        consumer ? nodeLabel(consumer) : std::string("the other kernel"), shapeToString(other.shape)));
  }
  if (a.shape != b.shape)
    return FusionDecision::forbid(
        fmt::format("their kernels iterate over different shapes ({} vs {})",
                    shapeToString(b.shape), shapeToString(a.shape)));
  return FusionDecision::allow();
}

RegionSummary join(const RegionSummary &a, const RegionSummary &b) {
  return b.kind == RegionKind::Gemm ? b : a;
}

FusionDecision classifyRegion(llvm::ArrayRef<const Node *> nodes, RegionSummary *out) {
  RegionSummary r;
  if (nodes.size() > kMaxRegionOps)
    return FusionDecision::forbid(fmt::format(
        "the kernel holds {} ops, more than the {} one kernel may hold", nodes.size(), kMaxRegionOps));
  for (const Node *n : nodes) {
    if (n->kind() == OpKind::MatMul) {
      if (r.anchor)
        return FusionDecision::forbid(fmt::format(
            "a matmul never fuses into another matmul kernel ({} and {})", nodeLabel(r.anchor), nodeLabel(n)));
      r.kind = RegionKind::Gemm;
      r.anchor = n;
    } else if (!isElementwise(n->kind())) {
      return FusionDecision::forbid(
          fmt::format("{} ({}) is not an op a generated kernel computes", nodeLabel(n), opName(n->kind())));
    }
    std::optional<Shape> s = broadcastShapes(r.shape, n->shape());
    if (!s)
      return FusionDecision::forbid(fmt::format("{} ({}) does not broadcast to the kernel's shape {}",
                                                nodeLabel(n), shapeToString(n->shape()),
                                                shapeToString(r.shape)));
    r.shape = *s;
  }
  if (r.anchor && r.shape != r.anchor->shape())
    return FusionDecision::forbid(fmt::format(
        "a matmul epilogue must have the matmul's shape {}, the kernel iterates over {}",
        shapeToString(r.anchor->shape()), shapeToString(r.shape)));
  if (out)
    *out = r;
  return FusionDecision::allow();
}

} // namespace kfuse
