#pragma once
/// Kernel fusion: groups the ops of a graph into kernels (Graph::addKernel / Node::setKernel)
/// and reorders the graph so each kernel's nodes are contiguous, kernels in topological order.
///
/// Rules, in the order the pass applies them:
///  1. Broadcast producers: an elementwise value read by a larger elementwise consumer is
///     recomputed inside the consumer's kernel (its node cloned) when that moves fewer bytes
///     than storing it and reading it back; otherwise it is stored.
///  2. Producer -> consumer: an elementwise consumer joins its producer's kernel when both
///     have the same shape; a matmul takes an elementwise chain on its result as epilogue
///     (the epilogue's other operands are read from memory: bias, residual, scale); a matmul
///     never joins another kernel and a kernel holds at most one matmul, except that two
///     sibling matmuls (the same A, ir/KernelRegion.h) whose results an elementwise op joins
///     become one kernel computing both products, where the target allows (`siblingGemm`).
///  3. Siblings: kernels of the same shape that read the same tensor merge into one
///     multi-output kernel, which reads it once.
///  Never: a cycle between kernels; a kernel over kMaxRegionOps ops or kMaxRegionTensors
///  parameters (ir/KernelRegion.h; a long chain becomes several kernels); graph outputs are
///  always written by their kernel.
/// Every producer -> consumer edge left unfused is logged with its reason, and on request
/// (FusionLog::withFused) every fused one with why: as a matmul's epilogue, into a row
/// reduction, element by element or broadcast.
#include "ir/FusionDecision.h"
#include "ir/Graph.h"
#include "passes/Pass.h"

#include <string>
#include <vector>

namespace kfuse {

/// One producer -> consumer edge (or a recompute) and what fusion did with it.
struct FusionEdge {
  std::string producer; ///< "%name" or "kind#id"
  std::string consumer;
  bool fused = false;
  std::string reason;
  /// "%a -> %b: fused: REASON" or "%a -> %b: not fused: REASON".
  std::string str() const;
};

struct FusionLog {
  /// Every producer -> consumer edge left unfused and each recompute, with its reason, in
  /// the order the pass decided them; with `withFused` every fused edge and why as well.
  std::vector<FusionEdge> edges;
  /// Also log why each fused edge fused (`kfuse opt --explain-fusion`, the dumps): a
  /// reason of some 150 bytes per edge, which a plain compile of a 10^6-op graph should not
  /// format and hold (+27% memory, +20% time on a 10^6-op chain).
  bool withFused = false;
  void clear() { edges.clear(); }
  /// How many edges were left unfused.
  size_t unfused() const;
  /// One line per edge: "%a -> %b: not fused: REASON".
  std::string str() const;
  /// [{"producer": "%a", "consumer": "%b", "fused": false, "reason": "..."}, ...]
  std::string json() const;
};

/// Groups `g` into kernels k0, k1, ... in program order; clears previous kernels first.
/// Returns whether the graph changed (false when it already had exactly these kernels).
/// Decisions go to `log` when given. Sibling matmuls fuse only where `siblingGemm` allows.
bool fuseGraph(Graph &g, FusionLog *log = nullptr, const SiblingGemmPolicy &siblingGemm = {});

} // namespace kfuse
