#include "ir/KernelRegion.h"

#include <fmt/format.h>
#include <llvm/ADT/SmallPtrSet.h>

namespace kfuse {

RegionSummary RegionSummary::of(const Node *n) {
  RegionSummary r;
  r.shape = n->shape();
  if (n->kind() == OpKind::MatMul) {
    r.kind = RegionKind::Gemm;
    r.anchor = n;
  } else if (isReduction(n->kind())) {
    r.kind = RegionKind::Reduce;
    r.anchor = n;
    r.shape = n->operand(0).node->shape();
    r.mask = reductionMask(n);
  }
  return r;
}

bool broadcastsOverRows(const RegionSummary &r, llvm::ArrayRef<int64_t> shape) {
  if (shape.size() > r.shape.size())
    return false;
  Shape aligned(r.shape.size() - shape.size(), 1);
  aligned.append(shape.begin(), shape.end());
  return aligned == reducedShape(r.shape, r.mask, true);
}

static Shape alignedTo(const Shape &s, llvm::ArrayRef<int64_t> shape) {
  if (shape.size() > s.size())
    return Shape(shape.begin(), shape.end());
  Shape a(s.size() - shape.size(), 1);
  a.append(shape.begin(), shape.end());
  return a;
}

/// A Reduce region and another region (Pointwise or Reduce): the other's ops must be over the
/// reduction's input shape or over its per-row shape; two Reduce regions reduce alike.
static FusionDecision joinReduce(const RegionSummary &red, const RegionSummary &other,
                                 const Node *consumer) {
  std::string who = consumer ? nodeLabel(consumer) : std::string("the other kernel");
  if (other.kind == RegionKind::Reduce) {
    if (other.shape != red.shape || other.mask != red.mask)
      return FusionDecision::forbid(fmt::format(
          "two reductions share a kernel only when they reduce the same axes of the same shape "
          "({} reduces {}, {} reduces {})",
          nodeLabel(red.anchor), shapeToString(red.shape), nodeLabel(other.anchor),
          shapeToString(other.shape)));
  } else if (alignedTo(red.shape, other.shape) != red.shape &&
             !broadcastsOverRows(red, other.shape)) {
    return FusionDecision::forbid(fmt::format(
        "a reduction kernel iterates over {} and its rows {}; {} is {}", shapeToString(red.shape),
        shapeToString(reducedShape(red.shape, red.mask, true)), who, shapeToString(other.shape)));
  }
  for (const Shape &sh : other.smaller)
    if (std::optional<Shape> b = broadcastShapes(sh, red.shape); !b || *b != red.shape)
      return FusionDecision::forbid(fmt::format(
          "{} holds an op of shape {} recomputed for its broadcast, which a reduction kernel "
          "over {} does not compute",
          who, shapeToString(sh), shapeToString(red.shape)));
  return FusionDecision::allow();
}

FusionDecision canReadReduction(const RegionSummary &red, const Node *reader, const Node *reduction) {
  if (canRead(valueLevel(red, reader), valueLevel(red, reduction)))
    return FusionDecision::allow();
  return FusionDecision::forbid(fmt::format(
      "{} reads {} {} broadcast over {}, not over the rows the kernel reduces", nodeLabel(reader),
      nodeLabel(reduction), shapeToString(reduction->shape()), shapeToString(reader->shape())));
}

FusionDecision siblingMatmuls(const Node *a, const Node *b) {
  const Node *aa = a->operand(0).node, *ab = b->operand(0).node;
  const Node *ba = a->operand(1).node, *bb = b->operand(1).node;
  const MatMulAttrs x = a->matmulAttrs(), y = b->matmulAttrs();
  if (aa != ab || x.transA != y.transA)
    return FusionDecision::forbid(fmt::format(
        "a matmul never fuses into another matmul kernel, unless both read the same A ({} reads "
        "{}, {} reads {})",
        nodeLabel(a), nodeLabel(aa), nodeLabel(b), nodeLabel(ab)));
  if (ba->type() != bb->type() || x.transB != y.transB || a->type() != b->type())
    return FusionDecision::forbid(fmt::format(
        "sibling matmuls {} and {} read the same A but their B operands ({} vs {}) or results "
        "differ in type or layout",
        nodeLabel(a), nodeLabel(b), ba->type().str(), bb->type().str()));
  return FusionDecision::allow();
}

FusionDecision canJoin(const RegionSummary &a, const RegionSummary &b, const Node *consumer) {
  if (a.kind == RegionKind::Gemm && b.kind == RegionKind::Gemm) {
    if (a.sibling || b.sibling)
      return FusionDecision::forbid(
          "a matmul kernel computes at most two products (a sibling pair) per tile");
    return siblingMatmuls(a.anchor, b.anchor);
  }
  if ((a.kind == RegionKind::Gemm && b.kind == RegionKind::Reduce) ||
      (a.kind == RegionKind::Reduce && b.kind == RegionKind::Gemm))
    return FusionDecision::forbid(
        "a reduction does not fuse with a matmul: the matmul's result is stored and read back");
  if (a.kind == RegionKind::Reduce)
    return joinReduce(a, b, consumer);
  if (b.kind == RegionKind::Reduce)
    return joinReduce(b, a, consumer);
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
  RegionSummary out = a.kind == RegionKind::Reduce ? a : b.kind != RegionKind::Pointwise ? b : a;
  if (a.kind == RegionKind::Gemm && b.kind == RegionKind::Gemm) // a sibling pair: out is b
    out.sibling = a.anchor;
  for (const RegionSummary *x : {&a, &b})
    for (const Shape &sh : x->smaller)
      if (sh != out.shape && llvm::find(out.smaller, sh) == out.smaller.end())
        out.smaller.push_back(sh);
  return out;
}

bool canRead(RegionValue reader, RegionValue value) {
  if (value == RegionValue::None || value == RegionValue::RowOnly)
    return false;
  // A per-row op reads per-row values; a per-element one (over S or smaller) anything.
  return reader == RegionValue::Row ? value == RegionValue::Row
                                    : reader != RegionValue::None && reader != RegionValue::RowOnly;
}

RegionValue valueLevel(const RegionSummary &r, const Node *n) {
  if (isReduction(n->kind()))
    return broadcastsOverRows(r, n->shape()) ? RegionValue::Row : RegionValue::RowOnly;
  if (alignedTo(r.shape, n->shape()) == r.shape) // [N] in a kernel over [1, N] too
    return RegionValue::Element;
  if (broadcastsOverRows(r, n->shape()))
    return RegionValue::Row;
  // A smaller value that varies only along kept axes (a [1] literal-like cast, a [M, 1]
  // slice of a [B, M, 1] row shape): per row too.
  Shape keep = reducedShape(r.shape, r.mask, true);
  if (std::optional<Shape> k = broadcastShapes(n->shape(), keep); k && *k == keep)
    return RegionValue::Row;
  std::optional<Shape> b = broadcastShapes(n->shape(), r.shape);
  return b && *b == r.shape ? RegionValue::Small : RegionValue::None;
}

FusionDecision classifyRegion(llvm::ArrayRef<const Node *> nodes, RegionSummary *out) {
  RegionSummary r;
  if (nodes.size() > kMaxRegionOps)
    return FusionDecision::forbid(fmt::format(
        "the kernel holds {} ops, more than the {} one kernel may hold", nodes.size(), kMaxRegionOps));
  for (const Node *n : nodes)
    if (isReduction(n->kind())) {
      RegionSummary red = RegionSummary::of(n);
      if (r.kind == RegionKind::Reduce && (red.shape != r.shape || red.mask != r.mask))
        return FusionDecision::forbid(fmt::format(
            "{} and {} reduce different axes or shapes ({} vs {})", nodeLabel(r.anchor),
            nodeLabel(n), shapeToString(r.shape), shapeToString(red.shape)));
      if (r.kind != RegionKind::Reduce)
        r = red;
    }
  if (r.kind == RegionKind::Reduce) {
    llvm::SmallPtrSet<const Node *, 16> in(nodes.begin(), nodes.end());
    for (const Node *n : nodes) {
      if (n->kind() == OpKind::MatMul)
        return FusionDecision::forbid(fmt::format(
            "{} is a matmul, and a reduction kernel holds no matmul", nodeLabel(n)));
      if (!isElementwise(n->kind()) && !isReduction(n->kind()))
        return FusionDecision::forbid(fmt::format(
            "{} ({}) is not an op a generated kernel computes", nodeLabel(n), opName(n->kind())));
      if (isReduction(n->kind()))
        continue;
      // Each op is computed per element (over S, or over a smaller shape that broadcasts
      // to S: a weight's cast, computed again per element) or per row.
      RegionValue level = valueLevel(r, n);
      if (level == RegionValue::None)
        return FusionDecision::forbid(fmt::format(
            "{} is {}, neither the reduction kernel's shape {}, its rows {} nor a shape that "
            "broadcasts to it",
            nodeLabel(n), shapeToString(n->shape()), shapeToString(r.shape),
            shapeToString(reducedShape(r.shape, r.mask, true))));
      if (level == RegionValue::Small) { // computed per element: never stored
        bool leaves = n->graph().isOutput(n);
        for (const Node *u : n->users())
          leaves |= !in.count(u);
        if (leaves)
          return FusionDecision::forbid(fmt::format(
              "{} {} is computed per element of the reduction kernel over {} and cannot be "
              "stored from it",
              nodeLabel(n), shapeToString(n->shape()), shapeToString(r.shape)));
      }
      for (const Operand &o : n->operands()) {
        if (!o.node || !in.count(o.node))
          continue;
        RegionValue from = valueLevel(r, o.node);
        if (!canRead(level, from))
          return FusionDecision::forbid(fmt::format(
              "{} reads {} {}, which a {} value of the reduction kernel over {} cannot read",
              nodeLabel(n), nodeLabel(o.node), shapeToString(o.node->shape()),
              level == RegionValue::Row ? "per-row" : "per-element", shapeToString(r.shape)));
      }
    }
    if (out)
      *out = r;
    return FusionDecision::allow();
  }
  for (const Node *n : nodes) {
    if (n->kind() == OpKind::MatMul) {
      if (r.sibling)
        return FusionDecision::forbid(fmt::format(
            "a matmul kernel computes at most two products ({}, {} and {})", nodeLabel(r.anchor),
            nodeLabel(r.sibling), nodeLabel(n)));
      if (r.anchor) {
        if (FusionDecision d = siblingMatmuls(r.anchor, n); !d)
          return d;
        r.sibling = n;
        continue; // the same shape as the anchor
      }
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
