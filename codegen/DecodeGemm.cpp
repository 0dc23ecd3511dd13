#include "codegen/DecodeGemm.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace kfuse::codegen {

bool decodeApplies(const GemmSpec &s, const Target &target) {
  // M=0 (an empty result, never launched) keeps the gemv, whose template takes it.
  return s.M >= 1 && s.M <= 16 && s.dtype != DType::F32 && target.sm >= 80;
}

/// Shared memory of one CTA: ST stages of A (16 x BK, or BK x 16 for A^T) and B (BK x BN,
/// or BN x BK for trans_b), rows padded by 8 elements for conflict-free ldmatrix.
size_t decodeSharedBytes(const GemmSpec &s) {
  size_t a = s.transA ? size_t(s.bk) * (16 + 8) : size_t(16) * (s.bk + 8);
  // A persistent grid keeps the warps' partial sums apart from the ring, which streams on.
  const size_t partials = decodeLoops(s) || s.streamK ? decodePartialBytes(s) : 0;
  if (s.tensorMaps()) // B by TMA: dense swizzled stages from a 1 KB boundary, mbarriers
    return 1024 + s.stages * (size_t(s.bk) * s.bn + a) * 2 + (8 * s.stages + 15) / 16 * 16 + partials;
  size_t b = s.transB ? size_t(s.bn) * (s.bk + 8) : size_t(s.bk) * (s.bn + 8);
  return s.stages * (a + b) * 2 + partials;
}

bool decodeLoops(const GemmSpec &s) { return s.ctas > 0 && s.ctas < decodeColumnTiles(s); }

unsigned decodeColumnTiles(const GemmSpec &s) {
  return static_cast<unsigned>(std::max<int64_t>(1, (s.N + s.bn - 1) / s.bn));
}

/// Tiles of `bk` along K (at least 1): the k steps of one column tile.
static uint64_t decodeKTiles(const GemmSpec &s, unsigned bk) {
  return uint64_t(std::max<int64_t>(1, (s.K + bk - 1) / bk));
}

uint64_t decodeStreamUnits(const GemmSpec &s) {
  return uint64_t(decodeColumnTiles(s)) * decodeKTiles(s, s.bk);
}

uint64_t decodeWorkspaceBytes(const GemmSpec &s) {
  if (!s.streamK)
    return 0;
  return (uint64_t(decodeColumnTiles(s)) + 3) / 4 * 16 + 2 * uint64_t(s.ctas) * s.M * s.bn * 4;
}

size_t decodePartialBytes(const GemmSpec &s) {
  return size_t(s.warpsN) * size_t(s.M) * (s.bn + 8) * 4;
}

std::string decodeDescribe(const GemmSpec &s) {
  return fmt::format("decode tensor-core mma.sync {}x{}x{}{}, {}, {} stages, {} warps{}", s.bm, s.bn,
                     s.bk, s.tensorMaps() ? " (B by TMA)" : "", s.ks > 1 ? fmt::format("K split over a {}-CTA cluster", s.ks)
                                    : std::string("no K split"),
                     s.stages, s.warpsN,
                     s.streamK ? fmt::format(", stream-K over {} CTAs", s.ctas)
                     : decodeLoops(s) ? fmt::format(", persistent over {} {}", s.ctas,
                                                    s.ks > 1 ? "clusters" : "CTAs")
                                      : std::string());
}

bool decodeTmaValid(const GemmSpec &s, const Target &target) {
  // Nothing to stream (an empty dim: the kernel is never launched) needs no tensor map.
  if (s.K <= 0 || s.N <= 0 || s.batch() <= 0)
    return false;
  return target.sm >= 90 && (s.transB ? s.K : s.N) % 8 == 0 && s.K < (int64_t(1) << 32) &&
         s.N < (int64_t(1) << 32) && double(s.K) * double(s.N) * 2 < 0x1p40;
}

/// CTAs of `s` one SM runs at once: one with B by TMA (measured fastest), else as many as
/// fit, at most two.
static unsigned decodePerSM(const GemmSpec &s, const Target &target) {
  return std::min(s.tensorMaps() ? 1u : 2u, blocksPerSM(target, s.sharedBytes(), s.threads()));
}
static double decodeSlots(const GemmSpec &s, const Target &target) {
  return double(decodePerSM(s, target)) * target.smCount;
}
/// Clusters of `ks` CTAs the device holds at once. A cluster's CTAs share one GPC; Hopper's
/// GPCs hold 16 to 18 SMs, so clusters of more than 2 are counted per 16 SMs (132 SMs hold
/// 32 clusters of 4, not 33; 16 of 8).
static unsigned decodeClusterSlots(const GemmSpec &s, const Target &target, unsigned ks) {
  constexpr unsigned gpcSMs = 16;
  const unsigned perSM = decodePerSM(s, target);
  if (ks <= 2 || target.smCount < gpcSMs)
    return std::max(1u, target.smCount * perSM / ks);
  return std::max(1u, target.smCount / gpcSMs * (gpcSMs * perSM / ks));
}
/// CTAs of `s` (clusters of `ks`) that the device holds at once as a persistent grid: what
/// fits counts the region of partial sums a CTA that loops over tiles keeps.
static unsigned persistentSlots(const GemmSpec &s, const Target &target, unsigned ks) {
  GemmSpec persistent = s;
  persistent.ctas = 1;
  return decodeClusterSlots(persistent, target, ks);
}
/// Column tiles of `s` over every batch: its CTAs without a K split.
static double decodeUnits(const GemmSpec &s) {
  return std::ceil(double(s.N) / s.bn) * std::max(1.0, double(s.batch()));
}

/// What every decode choice's reason starts with.
static std::string decodeWhyHead(const GemmSpec &s, const Target &target) {
  return fmt::format("M={} <= 16, {} on sm_{}: memory-bound on the {:.0f} weight bytes, streamed "
                     "once; tensor cores (rows >= M are zeros, so M=16 costs what M=1 does); ",
                     s.M, dtypeName(s.dtype), target.sm,
                     double(s.K) * double(s.N) * double(dtypeSize(s.dtype)) * double(s.batch()));
}

void configureDecode(GemmSpec &s, const Target &target, unsigned bn, unsigned bk, unsigned stages,
                     unsigned ks, unsigned warps, bool tma) {
  s.kernel = GemmKernel::Decode;
  s.bm = 16;
  s.bn = bn;
  s.bk = bk;
  s.warpsM = 1;
  s.warpsN = warps;
  s.stages = stages;
  s.ks = ks;
  s.streamK = false;
  s.tmaB = TmaOperand{};
  if (tma) // boxes of 64 columns x BK rows of [K, N], or 64 of K x BN rows of [N, K]
    s.tmaB = s.transB ? makeTmaOperand(s.N, s.K, operandMatrices(s, s.strideB, s.K * s.N), bn)
                      : makeTmaOperand(s.K, s.N, operandMatrices(s, s.strideB, s.K * s.N), bk);
  // One matrix: a persistent grid of as many clusters as the device holds at once, where the
  // column tiles are more (each CTA's ring then runs on from one tile to its next). Only
  // for clusters of 1 or 2 CTAs (a TPC's two SMs), which every SM can host: how many larger
  // clusters fit at once depends on the GPCs' sizes, and a persistent cluster that must
  // wait for a second wave doubles the time. Measured on an H100: Gemma-7B's block at T = 1
  // 8% slower with its down_proj as 16 persistent 8-CTA clusters than as 48 in waves. A
  // batch keeps one CTA per column tile and matrix (grid z), as many waves as that takes.
  const unsigned tiles = decodeColumnTiles(s);
  s.ctas = tiles;
  if (s.batch() == 1 && ks <= 2 && decodeClusterSlots(s, target, ks) < tiles)
    s.ctas = persistentSlots(s, target, ks);
  const double slots = decodeSlots(s, target), units = decodeUnits(s), ctas = units * s.ks;
  s.why = fmt::format(
      "{}{:.0f} {}-column tiles x {} = {:.0f} CTAs for {:.0f} slots ({} per SM on {} SMs): {}{}",
      decodeWhyHead(s, target), units, s.bn,
      s.ks > 1 ? fmt::format("a {}-CTA cluster along K", s.ks) : std::string("no K split"), ctas,
      slots, decodePerSM(s, target), target.smCount,
      decodeLoops(s) ? fmt::format("persistent, {} {} of {} taking {}-{} column tiles each", s.ctas,
                                   s.ks > 1 ? "clusters" : "CTAs", s.ks, tiles / s.ctas,
                                   (tiles + s.ctas - 1) / s.ctas)
                     : fmt::format("{:.2f} waves", ctas / slots),
      target.sm >= 90 ? "" : " (no thread-block clusters before sm_90)");
}

bool configureDecodeStreamK(GemmSpec &s, const Target &target, unsigned bn, unsigned bk,
                            unsigned stages, unsigned warps, bool tma) {
  configureDecode(s, target, bn, bk, stages, 1, warps, tma);
  GemmSpec sk = s; // whose workspace slots count in what fits
  sk.streamK = true;
  const unsigned ctas = persistentSlots(sk, target, 1);
  const uint64_t units = decodeStreamUnits(s);
  if (s.batch() != 1 || units < 2 * uint64_t(ctas))
    return false;
  s.ctas = ctas;
  s.streamK = true;
  s.why = fmt::format("{}stream-K: {} {}-column tiles x {} k tiles = {} units over {} CTAs ({} per "
                      "SM on {} SMs), {}-{} each; a column tile cut between CTAs meets in a "
                      "workspace, summed by the last to arrive",
                      decodeWhyHead(s, target), decodeColumnTiles(s), s.bn,
                      units / decodeColumnTiles(s), units, s.ctas, decodePerSM(s, target),
                      target.smCount, units / s.ctas, (units + s.ctas - 1) / s.ctas);
  return true;
}

bool decodeSplitValid(const GemmSpec &s, const Target &target, unsigned ks, unsigned bk) {
  const double kt = double(decodeKTiles(s, bk));
  // Clusters (distributed shared memory) exist from sm_90; at most 8 CTAs (portable size);
  // every rank must get a k tile.
  return ks == 1 || (target.sm >= 90 && ks <= 8 && ks <= kt && (ks - 1) * std::ceil(kt / ks) < kt);
}

/// A batch's K split: one CTA per column tile and matrix, so the cluster size KS whose CTA
/// count fills the most of its last wave (efficiency = waves / ceil(waves)); a larger KS must
/// beat a smaller one by 2% (each slice adds a pipeline fill and a partial-sum exchange).
static void chooseBatchedSplit(GemmSpec &s, const Target &target, unsigned warps, bool tma) {
  const double slots = decodeSlots(s, target), units = decodeUnits(s);
  auto efficiency = [&](double ks) {
    double w = units * ks / slots;
    return w / std::ceil(w);
  };
  unsigned best = 1;
  double bestEff = efficiency(1);
  for (unsigned ks = 2; ks <= 8; ++ks)
    if (decodeSplitValid(s, target, ks, s.bk) && efficiency(ks) > bestEff + 0.02) {
      best = ks;
      bestEff = efficiency(ks);
    }
  configureDecode(s, target, 64, s.bk, s.stages, best, warps, tma);
}

void chooseDecode(GemmSpec &s, const Target &target) {
  // The tile: all 16 fragment rows (rows >= M are zeros: M=16 costs what M=1 does, since
  // the weights dominate the bytes and mma.sync has compute to spare), 64 columns of
  // contiguous 128-byte ([K, N]) or 256-byte ([N, K]) rows. Below sm_90: 128 of K per stage
  // (16 KB of weights), 4 warps splitting each stage's K (two k16 steps each), all 64
  // columns' accumulators (32 registers) per warp, every A fragment reused for 8 mma; 3
  // stages (two CTAs in an A100's 164 KB; one fits the 99 KB of sm_86/89).
  // On sm_90 B streams by TMA with 8 warps, one CTA per SM, 256 of K per stage (32 KB of
  // weights, 4 stages: 162 KB): TMA measured on the H200 1.5-5 us faster than cp.async with
  // two CTAs per SM (device run 16, bench/results/gemm.md), and BK 256 within 0.1 us of the
  // fastest of 108 configurations for M = 1 and 16 (0.6-2 us faster than BK 128: half the
  // stage turnarounds, each a barrier and A's loads; device run 4 of 2026-12-03).
  const bool tma = decodeTmaValid(s, target);
  const unsigned warps = tma ? 8 : 4;
  configureDecode(s, target, 64, tma ? 256 : 128, target.sm >= 90 ? 4 : 3, 1, warps, tma);
  if (s.batch() > 1) {
    chooseBatchedSplit(s, target, warps, tma);
    return;
  }
  // One matrix (persistent for clusters of 1-2, configureDecode): memory-bound, so what decides is the
  // k tiles on the busiest CTA's path, rounds x (its k tiles per column tile + 1), the + 1
  // for what each column tile adds beyond its loads (the warps' and the cluster's partial
  // sums, the epilogue; the next tile's loads stream meanwhile). A column tile split over KS
  // CTAs shortens a CTA's path KS-fold at one cluster per KS SMs. Least cost, then least KS.
  // Few column tiles (k_proj 4096 -> 1024: 16) take a cluster of 8 to put 128 SMs to work;
  // many (gate_proj 4096 -> 14336: 224) no split, 132 persistent CTAs taking 1-2 each.
  const double kt = double(decodeKTiles(s, s.bk));
  unsigned best = 1;
  double bestCost = 0;
  for (unsigned ks = 1; ks <= 8; ++ks) {
    if (!decodeSplitValid(s, target, ks, s.bk))
      continue;
    configureDecode(s, target, 64, s.bk, s.stages, ks, warps, tma);
    // Persistent: the tiles per CTA; else the waves of clusters the device runs at once.
    const double rounds = std::ceil(double(decodeColumnTiles(s)) /
                                    (decodeLoops(s) ? s.ctas : decodeClusterSlots(s, target, ks)));
    const double cost = rounds * (std::ceil(kt / ks) + 1);
    if (ks == 1 || cost < bestCost) {
      best = ks;
      bestCost = cost;
    }
  }
  // Stream-K (configureDecodeStreamK) is not chosen here, only an autotune candidate: where
  // this cost model saw it 3-12% cheaper (Llama-3-8B's gate_proj, 31 against 34; GPT-2-XL's
  // c_proj, 7 against 8; Llama-3-70B TP8's gate_proj, 16 against 17) it measured 6-25%
  // slower on an H100, about 2-2.5 us more per kernel (bench/results/models.md).
  configureDecode(s, target, 64, s.bk, s.stages, best, warps, tma);
}

std::string decodeKernelAttributes(const GemmSpec &s) {
  if (s.kernel != GemmKernel::Decode || s.ks <= 1)
    return "";
  return fmt::format(" __cluster_dims__(1, {}, 1)", s.ks);
}

std::string decodeGemmCall(const GemmSpec &s, const std::string &head, const std::string &epiType,
                           const std::string &args) {
  return fmt::format("kf_gemm_decode<{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}>({}, {});", head,
                     s.transB ? "true" : "false", s.bn, s.bk, s.stages, s.warpsN, s.ks,
                     s.tensorMaps() ? "true" : "false", s.ctas, s.streamK ? "true" : "false",
                     epiType, args, s.streamK ? "ws" : "nullptr");
}

} // namespace kfuse::codegen
