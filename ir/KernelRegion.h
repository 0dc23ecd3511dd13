#pragma once
/// Kernel regions: what kind of kernel a set of nodes makes, and whether it can be one
/// generated kernel at all. The one rule that fusion (before it merges two kernels), the
/// verifier (on every region of a fused graph) and codegen (when it builds a kernel's spec)
/// all ask, so what one kernel may hold is decided in one place:
///  - every op is elementwise, except at most one matmul (a Gemm kernel: the matmul and its
///    elementwise epilogue; codegen emits the matmul first, and an op before it in program
///    order, e.g. a recomputed broadcast operand, cannot read it), or two sibling matmuls
///    (siblingMatmuls: the same A, B operands alike) whose products the epilogue joins;
///  - the ops' shapes broadcast to one iteration shape; a Gemm kernel iterates over its
///    matmul's result;
///  - a Reduce kernel holds reductions that all reduce the same axes of the same shape S
///    (its iteration shape), and elementwise ops over S (before the reductions: a prologue;
///    after, reading the reduced values broadcast back over the rows: an epilogue) or over
///    the reduced shape with keepdims (math on the per-row values: mean + eps, rsqrt); an
///    op over S reads a reduced value only where it broadcasts back over the rows.
#include "ir/FusionDecision.h"
#include "ir/Graph.h"
#include "ir/Reduction.h"

#include <llvm/ADT/ArrayRef.h>

namespace kfuse {

/// The most ops one kernel holds: fusion stops growing a region there, so a 10^5-op chain
/// becomes several kernels whose compile time, registers and source stay bounded. The
/// verifier and codegen refuse larger regions.
inline constexpr size_t kMaxRegionOps = 2000;
/// The most tensors one kernel takes as parameters (its distinct inputs and its outputs).
/// A pointer takes 8 bytes and a GEMM's two TMA tensor maps 128 each
/// (codegen/KernelEmitter.cpp): 256 tensors are at most 2304 bytes, under CUDA's 4 KB of
/// kernel parameters before 12.1 as well as its 32764 bytes since (about 4,090 pointers
/// overflowed it). The cap is that low for compile time: NVRTC's time grows with the square
/// of a kernel's parameters as codegen writes them (250 outputs 0.4 s, 1000 outputs 5.4 s,
/// 2000 outputs 20 s), so 10^4 outputs compile in seconds as 40 kernels, not in minutes as
/// 5. Fusion keeps every region under it (passes/RegionBudget.h).
inline constexpr size_t kMaxRegionTensors = 256;

/// The kinds of generated kernel (codegen::KernelKind mirrors them).
enum class RegionKind : uint8_t {
  Pointwise, ///< elementwise ops over one iteration shape
  Gemm,      ///< a matmul and its elementwise epilogue over the matmul's result
  Reduce,    ///< reductions over the same axes of one shape, with elementwise ops around them
};

/// What a region is, as far as the kernel-kind rules care.
struct RegionSummary {
  RegionKind kind = RegionKind::Pointwise;
  const Node *anchor = nullptr; ///< Gemm: its matmul; Reduce: its first reduction
  /// Gemm: the second matmul of a sibling pair (siblingMatmuls), computed by the same kernel
  /// per tile; null for one matmul.
  const Node *sibling = nullptr;
  Shape shape;                  ///< the iteration shape (Reduce: the reductions' input)
  AxisMask mask;                ///< Reduce: the reduced axes of `shape`
  /// Shapes of ops smaller than `shape` that the region holds (producers recomputed in a
  /// broadcasting consumer), at most a few: a Reduce kernel takes them only as per-row ops.
  llvm::SmallVector<Shape, 1> smaller;
  /// The region of one node (its own kernel).
  static RegionSummary of(const Node *n);
};

/// Reduce kernels: whether a value of `shape`, read by an op over the region's shape,
/// broadcasts as one value per row (aligned to the right, it is the region's shape with the
/// reduced axes as 1s). The kernel's per-row ops and the values they read have such shapes.
bool broadcastsOverRows(const RegionSummary &r, llvm::ArrayRef<int64_t> shape);

/// What a node of a Reduce region is: computed per element of S (Element), per element but
/// over a smaller shape that broadcasts to S (Small: a weight's cast), once per row (Row),
/// a reduction whose shape does not broadcast over the rows (RowOnly: stored, not read by
/// the region's element ops), or none of these (None: not in such a kernel).
enum class RegionValue : uint8_t { Element, Small, Row, RowOnly, None };
RegionValue valueLevel(const RegionSummary &r, const Node *n);
/// Whether an op of level `reader` in a Reduce kernel may read an in-kernel value of level
/// `value`.
bool canRead(RegionValue reader, RegionValue value);

/// Whether `reader`, an op of Reduce region `red`, may read the reduction `reduction` inside
/// the kernel: the reduced value must broadcast back over the rows the kernel reduces
/// (sum(x, axes=[1]) of [4, 4], read by an op of [4, 4] or [4], broadcasts along columns).
/// Fusion asks it of every edge between two kernels it joins; classifyRegion (the verifier)
/// applies the same canRead to every edge inside one.
FusionDecision canReadReduction(const RegionSummary &red, const Node *reader, const Node *reduction);

/// Whether matmuls `a` and `b` can be computed by one kernel as two products of the same
/// tile: they read the same A (one node, the same trans_a), B operands of one type and
/// trans_b, and give results of one type. Only the kind rule: whether the target's GEMM
/// kernel computes two products is the fusion pass's policy (PassContext::siblingGemm).
FusionDecision siblingMatmuls(const Node *a, const Node *b);

/// Whether the kernels `a` and `b` may become one, by the kind rules alone (fusion adds its
/// own: no cycle, epilogue operands read from memory, and canReadReduction on the edges
/// between the two). `consumer` names the node that would join, for the reason.
FusionDecision canJoin(const RegionSummary &a, const RegionSummary &b, const Node *consumer);
/// The region of `a` and `b` together (canJoin allowed it).
RegionSummary join(const RegionSummary &a, const RegionSummary &b);
/// Whether `nodes` (a region, in program order) can be one generated kernel, and of which
/// kind (`out`); the reason names the first rule broken.
FusionDecision classifyRegion(llvm::ArrayRef<const Node *> nodes, RegionSummary *out = nullptr);

} // namespace kfuse
