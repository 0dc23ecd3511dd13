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

/// Phases: a reduction is known one phase after its operand (an online sum: with its
/// operand, which its amax's phase makes known); any other op when its operands are.
static void assignPhases(const KernelSpec &k, ReduceSpec &r) {
  r.phase.assign(k.ops.size(), 0);
  for (size_t i = 0; i < k.ops.size(); ++i) {
    unsigned p = 0;
    for (const SpecRef &a : k.ops[i].args)
      if (a.kind == SpecRef::Op)
        p = std::max(p, r.phase[a.index]);
    r.phase[i] = isReduction(k.ops[i].kind) && r.online[i] < 0 ? p + 1 : p;
  }
}

/// ReduceSpec::online: sum(exp(x - m)) with m = amax(x), x read from registers alone.
static void findOnlineSums(const KernelSpec &k, ReduceSpec &r) {
  if (!r.inner || !r.cache)
    return;
  const Shape &S = k.iterShape;
  auto isOp = [&](const SpecRef &a, OpKind kind) {
    return a.kind == SpecRef::Op && k.ops[a.index].kind == kind;
  };
  // A value stored in 16 bits is rounded where it is made, for its readers too: a part
  // computed from it again would not see that rounding.
  std::vector<bool> output(k.ops.size(), false);
  for (const SpecOutput &o : k.outputs)
    output[o.op] = output[o.op] || o.tensor.type.dtype != DType::F32;
  // x's value at an element from cached inputs, per-row values and literals alone.
  auto fromRegisters = [&](const SpecRef &x) {
    std::vector<SpecRef> stack{x};
    std::vector<bool> seen(k.ops.size(), false);
    while (!stack.empty()) {
      SpecRef a = stack.back();
      stack.pop_back();
      if (a.kind == SpecRef::Input) {
        const SpecTensor &t = k.inputs[a.index];
        bool perRow = true;
        for (size_t d = 0; d < S.size(); ++d)
          perRow &= !r.mask[d] || S[d] == 1 || t.aligned[d] == 1;
        if (!perRow && !(t.full && contiguousRow(t, S, r.mask)))
          return false;
      } else if (a.kind == SpecRef::Op && !r.rowOp[a.index] && !seen[a.index]) {
        seen[a.index] = true;
        for (const SpecRef &b : k.ops[a.index].args)
          stack.push_back(b);
      }
    }
    return true;
  };
  auto same = [](const SpecRef &a, const SpecRef &b) { return a.kind == b.kind && a.index == b.index; };
  for (size_t i = 0; i < k.ops.size(); ++i) {
    // sum(exp(x - amax(x))), or sum or mean of (x - mean(x))^2 spelled d * d
    const SpecOp &red = k.ops[i];
    const bool softmax = red.kind == OpKind::Sum && isOp(red.args[0], OpKind::Exp);
    const bool variance = (red.kind == OpKind::Sum || red.kind == OpKind::Mean) &&
                          isOp(red.args[0], OpKind::Mul) &&
                          same(k.ops[red.args[0].index].args[0], k.ops[red.args[0].index].args[1]);
    if ((!softmax && !variance) || output[red.args[0].index])
      continue;
    const SpecRef &d = k.ops[red.args[0].index].args[0];
    if (!isOp(d, OpKind::Sub) || output[d.index])
      continue;
    const SpecRef &x = k.ops[d.index].args[0], &m = k.ops[d.index].args[1];
    if (!isOp(m, softmax ? OpKind::Amax : OpKind::Mean) || output[m.index])
      continue;
    if (same(k.ops[m.index].args[0], x) && x.kind != SpecRef::Literal && fromRegisters(x))
      r.online[i] = static_cast<int>(m.index);
  }
}

ReduceSpec makeReduceSpec(const KernelSpec &k, AxisMask mask, std::vector<bool> rowOp,
                          bool clusters) {
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
  r.online.assign(k.ops.size(), -1);
  assignPhases(k, r);
  if (!r.inner) {
    // Rows side by side in the lanes of a warp (coalesced: the kept dims are innermost),
    // 8 lanes splitting each row's elements.
    r.threads = 8;
    r.block = 256;
    return r;
  }
  // Vectors: 16 bytes of the widest contiguous tensor, where every row starts aligned.
  size_t widest = 0;
  unsigned contiguousInputs = 0;
  for (const SpecTensor &t : k.inputs)
    if (contiguousRow(t, S, r.mask)) {
      widest = std::max(widest, dtypeSize(t.type.dtype));
      contiguousInputs += t.full; // the cached ones: a weight shared by every row is not
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
  // A row of at most 8 vectors per lane stays in one warp where its inputs still fit the
  // registers (f32 rows of 513-1024, 16-bit rows of 1025-2048): its combines are shuffles
  // alone, with no block barrier shared with the block's other rows, and each lane keeps
  // twice the loads in flight.
  if (r.threads > 32 && vectors <= 32 * 8) {
    unsigned steps = static_cast<unsigned>((vectors + 31) / 32);
    if (!r.cache || fits(steps, 256)) {
      r.threads = 32;
      r.block = 256;
      r.steps = steps;
      r.cache = fits(steps, 256);
    }
  }
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
  findOnlineSums(k, r);
  assignPhases(k, r);
  // Stage the next row in shared memory where every cached input moves in vectors of 4 to
  // 16 bytes (what cp.async copies) and blocksPerSm CTAs' stages fit an sm_90 SM (228 KB,
  // 1 KB of it reserved per CTA).
  if (r.cluster > 1) {
    uint64_t bytes = 0;
    bool whole = true;
    for (const SpecTensor &t : k.inputs)
      if (t.full && contiguousRow(t, S, r.mask)) {
        bytes += uint64_t(r.colsPerCta()) * dtypeSize(t.type.dtype);
        whole &= r.vec * dtypeSize(t.type.dtype) >= 4;
      }
    const uint64_t perSm = 228 * 1024, reserved = 1024, statics = 1024;
    if (whole && bytes > 0 && r.blocksPerSm * (bytes + reserved + statics) <= perSm)
      r.stageBytes = static_cast<unsigned>(bytes);
  }
  return r;
}

} // namespace kfuse::codegen
