#include "codegen/ReduceSpec.h"

#include "codegen/KernelSpec.h"

#include <algorithm>

namespace kfuse::codegen {

unsigned ReduceSpec::phases() const {
  unsigned p = 0;
  for (size_t i = 0; i < phase.size(); ++i)
    if (rowOp[i])
      p = std::max(p, phase[i]);
  return p;
}

int64_t ReduceSpec::colsPerCta() const {
  if (split > 1) {
    int64_t vectors = (cols + vec - 1) / vec;
    return (vectors + split - 1) / split * vec;
  }
  return cols / cluster;
}

uint64_t ReduceSpec::workspaceCounters() const { return split > 1 ? uint64_t(rows) : 0; }

uint64_t ReduceSpec::workspacePartials() const {
  return split > 1 ? uint64_t(rows) * split * std::max(1u, phaseReductions) : 0;
}

uint64_t ReduceSpec::workspaceBytes() const {
  return split > 1 ? 8 * workspaceCounters() + 2 * 4 * workspacePartials() : 0;
}

/// Whether tensor `t` (aligned to S) is read along the row contiguously: it has every
/// reduced dim, and the reduced dims are S's innermost.
static bool contiguousRow(const SpecTensor &t, const Shape &S, const AxisMask &mask) {
  for (size_t d = 0; d < S.size(); ++d)
    if (mask[d] && t.aligned[d] != S[d])
      return false;
  return true;
}

static unsigned nextPow2(int64_t v) {
  unsigned p = 1;
  while (p < v && p < (1u << 30))
    p <<= 1;
  return p;
}

uint64_t stagedRowBytes(const ReduceSpec &r, const SpecTensor &t) {
  return r.stage && r.cache && r.inner && t.full ? uint64_t(r.colsPerCta()) * dtypeSize(t.type.dtype)
                                                 : 0;
}

/// ReduceSpec::stage: for a cluster's rows, where a CTA takes more than one row (more rows
/// than the device holds clusters at once, at 2048 threads per SM) and every cached input's
/// rows and shares start on 16 bytes (the bulk copy's alignment), in at most 64 KB of shared
/// memory per CTA. Measured on the H100 (bench/results/reductions.md, run 12): softmax over
/// rows of 131072 in bf16 11% faster; one CTA per row of 8192, 9-12% slower (softmax,
/// LayerNorm), where the SM's other CTAs already overlap one CTA's loads with another's
/// phases; rows of 1024, within 2%.
static void planStage(ReduceSpec &r, const KernelSpec &k, bool sm90, unsigned smCount) {
  if (!sm90 || !r.inner || !r.cache || r.cluster < 2 || r.split > 1 || r.steps == 0 ||
      smCount == 0)
    return;
  // A share starting on 16 bytes starts every row on 16 (a row is `cluster` shares).
  uint64_t bytes = 0;
  for (const SpecTensor &t : k.inputs) {
    uint64_t share = t.full ? uint64_t(r.colsPerCta()) * dtypeSize(t.type.dtype) : 0;
    if (share % 16 != 0)
      return;
    bytes += share;
  }
  // One row per CTA (a cluster's CTAs are blocks of 512): a CTA loops where the rows
  // outnumber the clusters resident at once.
  uint64_t resident = uint64_t(smCount) * (2048 / r.block) / r.cluster;
  if (bytes == 0 || bytes > 64 * 1024 || uint64_t(r.rows) <= resident)
    return;
  r.stage = true;
  r.stageBytes = static_cast<unsigned>(bytes);
}

ReduceSpec makeReduceSpec(const KernelSpec &k, AxisMask mask, std::vector<bool> rowOp,
                          bool clusters, unsigned smCount) {
  ReduceSpec r;
  const Shape &S = k.iterShape;
  r.mask = std::move(mask);
  r.rowOp = std::move(rowOp);
  r.rows = r.cols = 1;
  // Inner: no kept dim of size > 1 after a reduced one of size > 1. The products cannot
  // overflow unless a dim is 0 (a shape has at most 2^48 elements, and so has the result):
  // with no row, both are 0; with empty rows, N is 0 (a sum of 0, a mean of NaN per row).
  bool keptZero = false, reducedZero = false;
  for (size_t d = 0; d < S.size(); ++d)
    (r.mask[d] ? reducedZero : keptZero) |= S[d] == 0;
  bool seenReduced = false;
  for (size_t d = 0; d < S.size(); ++d) {
    if (r.mask[d])
      r.cols = keptZero || reducedZero ? 0 : r.cols * S[d];
    else
      r.rows = keptZero ? 0 : r.rows * S[d];
    if (S[d] == 1)
      continue;
    if (r.mask[d])
      seenReduced = true;
    else if (seenReduced)
      r.inner = false;
  }
  // Phases: a reduction is known one phase after its operand; any other op when its
  // operands are.
  r.phase.assign(k.ops.size(), 0);
  for (size_t i = 0; i < k.ops.size(); ++i) {
    unsigned p = 0;
    for (const SpecRef &a : k.ops[i].args)
      if (a.kind == SpecRef::Op)
        p = std::max(p, r.phase[a.index]);
    r.phase[i] = isReduction(k.ops[i].kind) ? p + 1 : p;
  }
  std::vector<unsigned> perPhase(k.ops.size() + 2, 0);
  for (size_t i = 0; i < k.ops.size(); ++i)
    if (isReduction(k.ops[i].kind))
      r.phaseReductions = std::max(r.phaseReductions, ++perPhase[r.phase[i]]);
  if (!r.inner) {
    // Rows side by side in the lanes of a warp (coalesced: the kept dims are innermost),
    // 8 lanes splitting each row's elements.
    r.threads = 8;
    r.block = 256;
    return r;
  }
  // Vectors: 16 bytes of the widest contiguous tensor, where every row starts aligned.
  size_t widest = 0;
  unsigned contiguousInputs = 0, cached16 = 0;
  for (const SpecTensor &t : k.inputs)
    if (contiguousRow(t, S, r.mask)) {
      widest = std::max(widest, dtypeSize(t.type.dtype));
      contiguousInputs += t.full; // the cached ones: a weight shared by every row is not
      cached16 += t.full && dtypeSize(t.type.dtype) == 2;
    }
  for (const SpecOutput &o : k.outputs)
    if (contiguousRow(o.tensor, S, r.mask))
      widest = std::max(widest, dtypeSize(o.tensor.type.dtype));
  r.vec = widest ? static_cast<unsigned>(16 / widest) : 1;
  while (r.vec > 1 && r.cols % r.vec != 0)
    r.vec /= 2;
  // Threads per row: about 4 vectors each, from 1 (short rows, many per block) to 1024.
  int64_t vectors = (r.cols + r.vec - 1) / r.vec;
  r.threads = std::clamp(nextPow2((vectors + 3) / 4), 1u, 1024u);
  r.block = std::max(256u, r.threads);
  r.steps = static_cast<unsigned>((vectors + r.threads - 1) / r.threads);
  // Registers: at most 64 cached f32 values per thread, 24 in blocks of 1024 threads
  // (which have 64 registers each; more spilled, measured with ptxas -v).
  auto fits = [&](unsigned steps, unsigned block) {
    uint64_t most = block >= 1024 ? 24 : 64;
    return contiguousInputs > 0 && uint64_t(steps) * r.vec * contiguousInputs <= most;
  };
  r.cache = r.steps > 0 && fits(r.steps, r.block);
  // Packed only where the f32 cache holds more than 32 values per thread (residual +
  // RMSNorm's two rows: 99 registers as f32, two blocks of 256 per SM; 64 packed, four):
  // measured on the H100 (bench/results/reductions.md, run 9), packing a cache of 32
  // values made softmax, log-softmax and LayerNorm over rows of 8192 3-11% slower (the
  // extra conversions in each phase, and more blocks per SM than they gain from).
  uint64_t f32Values = uint64_t(r.steps) * r.vec * contiguousInputs;
  r.packed = r.cache && f32Values > 32 && cached16 > 0;
  // A row too long for one CTA's registers: split over a cluster of 2 to 8 CTAs of 512
  // threads, each holding its share, where the shares are whole vectors. The smallest
  // cluster whose shares leave room for two CTAs per SM (32 cached values: one CTA's loads
  // overlap the other's combines and stores; with one CTA of 64 values per SM, rows of
  // 131072 ran at 25-55% of the copy roof on the H200), else the smallest that fits at all.
  if (!r.cache && r.steps > 0 && clusters && contiguousInputs > 0 && r.threads == 1024)
    for (unsigned perSm : {2u, 1u}) {
      for (unsigned c = 2; c <= 8 && !r.cache; c *= 2) {
        if (vectors % c != 0)
          continue;
        unsigned steps = static_cast<unsigned>((vectors / c + 511) / 512);
        if (uint64_t(steps) * r.vec * contiguousInputs <= 64 / perSm) {
          r.cluster = c;
          r.threads = r.block = 512;
          r.steps = steps;
          r.cache = true;
          r.blocksPerSm = perSm;
        }
      }
      if (r.cache)
        break;
    }
  // Rows too few to fill the device (with their clusters): split each over CTAs of 512
  // threads across the grid, two per SM, as many as leave each CTA at least 4 vector steps
  // per thread (fewer: the combine's wait outweighs the share). A share that fits 32 values
  // per thread is held in registers; a longer one is read again in each phase, from L2
  // where the rows fit there.
  if (r.threads >= 512 && r.steps > 0 && smCount > 0) {
    uint64_t want = 2 * uint64_t(smCount) / uint64_t(r.rows);
    uint64_t useful = uint64_t(vectors) / (512 * 4);
    uint64_t split = std::min(want, useful);
    if (split > r.cluster && split >= 2) {
      r.split = static_cast<unsigned>(split);
      r.cluster = 1;
      r.threads = r.block = 512;
      int64_t share = r.colsPerCta() / r.vec;
      r.steps = static_cast<unsigned>((share + 511) / 512);
      // 32 values in registers as the clusters hold them; 16 where each is its own load
      // (rows of odd length: 23 of them spilled 4-8 bytes in 16-bit log-softmax, ptxas).
      uint64_t most = r.vec > 1 ? 32 : 16;
      r.cache = contiguousInputs > 0 && uint64_t(r.steps) * r.vec * contiguousInputs <= most;
      r.blocksPerSm = 2;
      r.packed = false; // at most 32 values per thread
    }
  }
  planStage(r, k, clusters, smCount);
  return r;
}

} // namespace kfuse::codegen
