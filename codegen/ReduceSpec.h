#pragma once
/// ReduceSpec: the plan of a Reduce kernel (ir/KernelRegion.h), the third kernel kind beside
/// Pointwise and GemmSpec. Its iteration shape S is the reductions' input; the kernel sees S
/// as M rows (the kept axes) of N elements (the reduced axes). Each row is taken by a group
/// of `threads` threads, which
///  - load the row's inputs (into registers when `cache`, so the later phases do not read
///    memory again),
///  - run the phases: phase p accumulates the reductions that read values of phase p-1
///    (softmax: amax, then sum(exp(x - max))) in f32, combines each across the group
///    (warp shuffles, then shared memory) in a fixed order, and computes the per-row ops
///    that follow,
///  - then compute and store the values over S (the epilogue) and the per-row outputs.
/// `inner`: the reduced axes are the innermost, so a row is contiguous: the group's threads
/// split it in 16-byte vectors (`vec` elements). Otherwise (column reductions) each row is
/// strided: the group's lanes are rows side by side, so their loads coalesce, and `threads`
/// lanes split each row's elements.
#include "ir/Reduction.h"

#include <cstdint>
#include <vector>

namespace kfuse::codegen {

struct KernelSpec;
struct SpecTensor;

struct ReduceSpec {
  AxisMask mask;       ///< the reduced axes of S
  int64_t rows = 0;    ///< M: the product of the kept dims
  int64_t cols = 0;    ///< N: the product of the reduced dims
  bool inner = true;   ///< the reduced axes are innermost (contiguous rows)
  unsigned threads = 1; ///< threads per row (a power of two)
  unsigned block = 256; ///< threads per block: block / threads rows side by side
  unsigned vec = 1;     ///< elements per vector access of a contiguous row
  unsigned steps = 0;   ///< inner: vector steps per thread and row, ceil(N / (threads * vec))
  /// inner: the row's contiguous inputs over the whole shape stay in registers (a weight
  /// shared by every row, like RMSNorm's, is read again from the caches instead)
  bool cache = false;
  /// with `cache`: 16-bit inputs stay as stored in the registers, two to a register, and
  /// are converted where each phase reads them (fewer registers, more instructions)
  bool packed = false;
  /// inner: CTAs per row, one thread-block cluster (sm_90), each holding 1/cluster of the
  /// row in registers and combining partials through distributed shared memory: rows too
  /// long for one CTA's registers are still read from memory once.
  unsigned cluster = 1;
  /// inner: CTAs per row across the grid (rows too few to fill the device: a 1 x 2^24
  /// softmax on one CTA ran on 1 SM of 132). Each CTA takes a 1/split share of the row (held
  /// in registers where it fits, else read again in each phase) and the shares' partials
  /// meet in a workspace in global memory: a CTA writes its partial, arrives at its row's
  /// counter and waits for the others, then combines every partial in rank order (the same
  /// bits in every CTA and on every run). The CTAs wait on each other, so the kernel is
  /// launched cooperatively (all resident at once). Exclusive with `cluster`.
  unsigned split = 1;
  /// A cluster's rows, cached, sm_90: a CTA takes its rows one after another, and its share
  /// of each row's cached inputs comes into shared memory through the bulk copy engine
  /// (cp.async.bulk) one row ahead: the next row's bytes arrive while this row's phases,
  /// combines and stores run, instead of after them (with a cluster's barriers between the
  /// loads and the stores, rows of 131072 reached 72-85% of the copy on the H100).
  bool stage = false;
  /// With `stage`: the dynamic shared memory of one CTA, its share of a row of every cached
  /// input, one input after another.
  unsigned stageBytes = 0;
  /// The CTAs per SM the kernel's registers must leave room for (`__launch_bounds__`'s
  /// second argument; 1: no constraint beyond the block size).
  unsigned blocksPerSm = 1;
  /// Per op of the spec: computed once per row (a reduction, or an op over the per-row
  /// shape) rather than per element.
  std::vector<bool> rowOp;
  /// Per op: the phase after which its value is known (0: from the inputs alone; a
  /// reduction: one more than its operand's).
  std::vector<unsigned> phase;
  /// The reductions of the phase that has the most.
  unsigned phaseReductions = 0;

  unsigned rowsPerBlock() const { return block / threads; }
  /// The elements of a row one CTA takes (a whole number of vectors; with `split`, the last
  /// CTA's share may be shorter).
  int64_t colsPerCta() const;
  /// The CTAs that work on one row together: a cluster, or a split row's CTAs.
  unsigned ctasPerRow() const { return cluster * split; }
  /// With `split`: the workspace in global memory, zeroed once: one 64-bit arrival counter
  /// per group of CTAs (rows in flight), then two buffers (alternating by phase) of one f32
  /// partial per CTA and reduction of a phase.
  uint64_t workspaceBytes() const;
  /// The workspace's counters, and the f32 partials per buffer.
  uint64_t workspaceCounters() const;
  uint64_t workspacePartials() const;
  unsigned phases() const;
};

/// With `r.stage`: the bytes of one row's share of input `t` that a CTA stages (its cached
/// inputs: those of the whole iteration shape), else 0.
uint64_t stagedRowBytes(const ReduceSpec &r, const SpecTensor &t);

/// The plan of `k` (its ops, inputs and outputs set; `rowOp` given): the phases, the thread
/// layout and the vector width; clusters where `clusters` (the target is sm_90 or newer);
/// a split over the grid where the rows are too few to fill `smCount` SMs.
ReduceSpec makeReduceSpec(const KernelSpec &k, AxisMask mask, std::vector<bool> rowOp,
                          bool clusters, unsigned smCount);

} // namespace kfuse::codegen
