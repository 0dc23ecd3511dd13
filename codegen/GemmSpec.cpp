#include "codegen/GemmSpec.h"

#include "codegen/DecodeGemm.h"

#include "ir/Error.h"
#include "ir/Units.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace kfuse::codegen {

const char *gemmKernelName(GemmKernel k) {
  switch (k) {
  case GemmKernel::Wgmma:
    return "wgmma";
  case GemmKernel::TensorCore:
    return "tensor-core";
  case GemmKernel::Simt:
    return "simt-f32";
  case GemmKernel::Gemv:
    return "gemv";
  case GemmKernel::Decode:
    return "decode";
  }
  return "?";
}

unsigned blocksPerSM(const Target &t, size_t sharedBytes, unsigned threads) {
  const size_t perSM = t.sharedPerSM();
  const size_t bySmem = perSM / (sharedBytes + 1024), byThreads = 2048 / std::max(threads, 1u);
  return unsigned(std::max<size_t>(1, std::min(bySmem, byThreads)));
}

size_t GemmSpec::sharedBytes() const {
  if (kernel == GemmKernel::Wgmma) // 1 KB to align the swizzled stages, full/empty barriers,
    return 1024 + size_t(stages) * (bm + bn * products()) * bk * dtypeSize(dtype) + 16 * stages + // per consumer warp
           size_t(4 * warpsM) * 16 * 72 * 2; // a 16 x 72 epilogue stage

  if (kernel == GemmKernel::Decode)
    return decodeSharedBytes(*this);
  if (kernel != GemmKernel::TensorCore)
    return 0;
  // Rows padded by 8 elements (16 bytes) so ldmatrix's eight row reads hit distinct banks;
  // TF32's K-contiguous f32 rows by 4, so a fragment's 32 scalar reads (8 rows x 4 k) do.
  const size_t kPad = tf32() ? 4 : 8;
  size_t a = transA ? size_t(bk) * (bm + 8) : size_t(bm) * (bk + kPad);
  size_t b = transB ? size_t(bn) * (bk + kPad) : size_t(bk) * (bn + 8);
  return stages * (a + b) * dtypeSize(dtype);
}

std::string GemmSpec::describe() const {
  switch (kernel) {
  case GemmKernel::Wgmma:
    return fmt::format("wgmma+TMA{} {}x{}x{}{}, {} stages, {} consumer warpgroup{}{} + 1 TMA "
                       "producer, {} persistent CTA{}{}",
                       tf32() ? " TF32" : "", bm, bn, bk, dual ? " x2 products" : "", stages,
                       warpsM, warpsM == 1 ? "" : "s", pingpong ? " in ping-pong" : "", ctas,
                       ctas == 1 ? "" : "s",
                       cluster > 1 ? fmt::format(" in {}-CTA clusters sharing B (TMA multicast)", cluster)
                                   : std::string());
  case GemmKernel::TensorCore:
    return fmt::format("tensor-core mma.sync{} {}x{}x{}, {} stages, {} warps",
                       tf32() ? " TF32" : "", bm, bn, bk, stages, warpsM * warpsN);
  case GemmKernel::Simt:
    return fmt::format("simt f32 FFMA {}x{}x{}, {} threads", bm, bn, bk, threads());
  case GemmKernel::Gemv:
    return fmt::format("gemv {} columns per block, {} warps", bn, warpsN);
  case GemmKernel::Decode:
    return decodeDescribe(*this);
  }
  return "?";
}

/// Element strides of an operand's batch dims, aligned to the output's batch dims (0 where
/// the operand is 1 or absent: broadcast).
static std::vector<int64_t> batchStrides(const Shape &s, const Shape &outBatch) {
  std::vector<int64_t> st(outBatch.size(), 0);
  if (double(s[s.size() - 1]) * double(s[s.size() - 2]) > 0x1p62)
    fail("matmul operand {} is beyond the sizes a generated GEMM indexes", shapeToString(s));
  int64_t mat = s[s.size() - 1] * s[s.size() - 2], run = mat;
  size_t rb = s.size() - 2;
  for (size_t j = 0; j < rb; ++j) {
    size_t d = rb - 1 - j;               // operand batch dim, innermost first
    size_t od = outBatch.size() - 1 - j; // the output dim it aligns with
    st[od] = s[d] == 1 ? 0 : run;
    if (double(run) * double(s[d]) > 0x1p62) // a zero-size operand may have huge dims
      fail("matmul operand {} is beyond the sizes a generated GEMM indexes", shapeToString(s));
    run *= s[d];
  }
  return st;
}

uint64_t operandMatrices(const GemmSpec &s, const std::vector<int64_t> &stride,
                                int64_t mat) {
  uint64_t n = 1;
  if (mat == 0) // an empty matrix: its batch strides are 0 as well
    return n;
  for (size_t j = 0; j < stride.size(); ++j)
    n += uint64_t(s.batchShape[j] - 1) * uint64_t(stride[j] / mat);
  return n;
}

TmaOperand makeTmaOperand(uint64_t rows, uint64_t cols, uint64_t matrices, uint32_t boxRows,
                          unsigned elemBytes) {
  TmaOperand t;
  t.dims[0] = cols;
  t.dims[1] = rows;
  t.dims[2] = matrices;
  t.strides[0] = cols * elemBytes;
  t.strides[1] = rows * cols * elemBytes;
  t.box[0] = 128 / elemBytes;
  t.box[1] = boxRows;
  t.box[2] = 1;
  return t;
}

/// Why the wgmma kernel cannot take this problem ("" when it can): TMA needs 16-byte row
/// strides, dims below 2^32 and strides below 2^40 bytes.
static std::string wgmmaRefusal(const GemmSpec &s) {
  if (s.K == 0 || s.M == 0 || s.N == 0 || s.batch() == 0)
    return "an empty dim";
  const int64_t es = int64_t(dtypeSize(s.dtype)), perRow = 16 / es; // elements per 16 bytes
  if ((s.transA ? s.M : s.K) % perRow != 0)
    return fmt::format("A's rows ({} elements) are not 16-byte multiples for TMA",
                       s.transA ? s.M : s.K);
  if ((s.transB ? s.K : s.N) % perRow != 0)
    return fmt::format("B's rows ({} elements) are not 16-byte multiples for TMA",
                       s.transB ? s.K : s.N);
  if (s.dtype == DType::F32 && (s.transA || !s.transB))
    return "TF32 wgmma reads K-major A and B only (A [M, K], B [N, K]: trans_b)";
  if (double(s.M) * double(s.K) * es >= 0x1p40 || double(s.K) * double(s.N) * es >= 0x1p40 ||
      std::max({s.M, s.N, s.K}) >= (int64_t(1) << 32))
    return "an operand beyond TMA's 2^32 elements per dim / 2^40-byte strides";
  return "";
}

namespace {
/// A wgmma kernel's grid for BMxBN tiles in clusters of `cluster` CTAs: its tiles, its work
/// units (`cluster` M-adjacent tiles each), its persistent CTAs (a cluster per unit, up to the
/// SMs' worth, or for 2-CTA clusters as many as the device holds at once) and the rounds
/// the units take over them.
struct WgmmaGrid {
  double tiles = 0, units = 0, rounds = 0;
  unsigned ctas = 0;
};
WgmmaGrid wgmmaGrid(const GemmSpec &s, const Target &target, unsigned bm, unsigned bn,
                    unsigned cluster) {
  const double mt = std::ceil(double(s.M) / bm), nt = std::ceil(double(s.N) / bn);
  WgmmaGrid g;
  g.tiles = mt * nt * double(s.batch());
  g.units = std::ceil(mt / cluster) * nt * double(s.batch());
  const double slots = std::max(1.0, double(cluster == 1 ? target.smCount : target.pairs()));
  g.ctas = cluster * static_cast<unsigned>(std::max(1.0, std::min(g.units, slots)));
  g.rounds = std::ceil(g.units / slots);
  return g;
}
} // namespace

void configureWgmma(GemmSpec &s, const Target &target, unsigned warpsM, unsigned bn,
                    unsigned stages, bool pingpong, unsigned cluster) {
  // A ping-pong consumer holds both halves' accumulators: 2 x BN/2 registers per thread.
  if (pingpong && (warpsM != 2 || bn != 128))
    fail("internal: a ping-pong wgmma kernel takes 2 consumer warpgroups and 128 columns");
  if (cluster != 1 && (cluster != 2 || bn % 128 != 0))
    fail("internal: a wgmma cluster is 1 CTA, or 2 splitting B's 64-column boxes");
  // Two products hold 2 x BN/2 accumulators per thread: as a 256-column tile.
  if (s.dual && (pingpong || cluster != 1 || bn > 128))
    fail("internal: a dual wgmma kernel takes up to 128 columns, no ping-pong or cluster");
  s.kernel = GemmKernel::Wgmma;
  s.pingpong = pingpong;
  s.cluster = cluster;
  const unsigned es = unsigned(dtypeSize(s.dtype));
  s.bk = 128 / es; // a k step is one 128-byte swizzle row: 64 16-bit or 32 TF32 elements
  s.warpsM = warpsM;
  s.bm = 64 * warpsM;
  s.bn = bn;
  s.stages = stages;
  const WgmmaGrid grid = wgmmaGrid(s, target, s.bm, s.bn, cluster);
  s.ctas = grid.ctas;
  s.tmaA = s.transA ? makeTmaOperand(s.K, s.M, operandMatrices(s, s.strideA, s.M * s.K), 64, es)
                    : makeTmaOperand(s.M, s.K, operandMatrices(s, s.strideA, s.M * s.K), s.bm, es);
  // B as [N, K]: each CTA of a cluster loads BN / CL of the tile's rows.
  s.tmaB = s.transB ? makeTmaOperand(s.N, s.K, operandMatrices(s, s.strideB, s.K * s.N), s.bn / cluster, es)
                    : makeTmaOperand(s.K, s.N, operandMatrices(s, s.strideB, s.K * s.N), 64, es);
  s.why = fmt::format("{} on sm_90a: wgmma, operands by TMA; {:.0f} {}x{} tiles for {} SMs",
                      dtypeName(s.dtype), grid.tiles, s.bm, s.bn, target.smCount);
}

void configureTensorCore(GemmSpec &s, const Target &target, bool big, unsigned stages) {
  s.kernel = GemmKernel::TensorCore;
  s.bk = 32;
  s.stages = stages;
  double tiles128 = double((s.M + 127) / 128) * double((s.N + 127) / 128) * double(s.batch());
  if (big) {
    s.bm = s.bn = 128;
    s.warpsM = 2;
    s.warpsN = 4;
    s.why = fmt::format("{} on sm_{}: tensor cores; {:.0f} 128x128 tiles {} {} SMs",
                        dtypeName(s.dtype), target.sm, tiles128,
                        tiles128 >= double(target.smCount) ? "fill" : "for", target.smCount);
  } else {
    s.bm = s.bn = 64;
    s.warpsM = s.warpsN = 2;
    s.why = fmt::format("{} on sm_{}: tensor cores; {} {:.0f} 128x128 tiles for {} SMs, so 64x64",
                        dtypeName(s.dtype), target.sm,
                        tiles128 >= double(target.smCount) ? "even with" : "only", tiles128,
                        target.smCount);
  }
  // f32 (TF32) stages take twice the bytes: as many as fit the device, at least 2.
  while (s.stages > 2 && s.sharedBytes() > target.sharedPerBlock())
    --s.stages;
}

double wgmmaTileEfficiency(unsigned warpsM, unsigned bn, unsigned cluster) {
  if (warpsM == 2)
    return bn == 256 ? 1.0 : cluster > 1 ? 0.93 : 0.90;
  return bn == 256 ? 0.82 : 0.74;
}

double gemmKernelRate(const GemmSpec &s) {
  switch (s.kernel) {
  case GemmKernel::Wgmma: // TF32: 0.47 of the 16-bit tile rate (run 7; the dense peaks: 0.5)
    return wgmmaTileEfficiency(s.warpsM, s.bn * s.products(), s.cluster) * (s.tf32() ? 0.47 : 1.0);
  case GemmKernel::TensorCore: // device runs 2 and 8 of 2026-12-04 (bench/results/gemm.md)
    return s.tf32() ? 0.145 : 0.413;
  case GemmKernel::Simt:
    return 0.032;
  case GemmKernel::Gemv:
  case GemmKernel::Decode:
    break;
  }
  return 1.0;
}

/// The wgmma tile of the least estimated time: rounds of tiles over the SMs (clusters for
/// the 128x128 tile, whose B is then shared) x a tile's work / its efficiency
/// (wgmmaTileEfficiency). Consumer warpgroups of 64 rows: two, or one where M <= 64 would
/// leave the second idle; as many stages as fit in 200 KB (128x256: 4 of 48 KB; 128x128: 6;
/// 64x128: 8). Ties go to the larger tile.
static void chooseWgmmaTile(GemmSpec &s, const Target &target) {
  struct Tile {
    unsigned wgc, bn;
  };
  // A dual GEMM's tile holds two products: BN columns of each, as a 2 x BN tile's registers.
  const Tile single[] = {{2, 256}, {2, 128}, {1, 256}, {1, 128}};
  const Tile dual[] = {{2, 128}, {2, 64}, {1, 128}, {1, 64}};
  const unsigned p = s.products();
  const Tile *best = nullptr;
  double bestCost = 0;
  WgmmaGrid bestGrid;
  unsigned bestCluster = 1;
  for (const Tile &c : s.dual ? dual : single) {
    if (c.wgc == 2 && s.M <= 64)
      continue;
    const unsigned bm = 64 * c.wgc;
    // 128x128: B shared by 2-CTA clusters where there are two M-tiles to pair (measured
    // 3-10% faster than alone at 768 x 2048 x 8192 up to 8192^3; the 128x256 tile gains
    // nothing from it, nor would a dual one's 2 x 128).
    const unsigned cluster = c.wgc == 2 && c.bn == 128 && s.M > bm && !s.dual ? 2 : 1;
    const WgmmaGrid g = wgmmaGrid(s, target, bm, c.bn, cluster);
    const double cost =
        g.rounds * bm * c.bn * p / wgmmaTileEfficiency(c.wgc, c.bn * p, cluster);
    if (!best || cost < bestCost * 0.999) {
      best = &c;
      bestCost = cost;
      bestGrid = g;
      bestCluster = cluster;
    }
  }
  configureWgmma(s, target, best->wgc, best->bn,
                 std::min(8u, 200u * 1024 / ((64 * best->wgc + best->bn * p) * 64 * 2)), false,
                 bestCluster);
  s.why = fmt::format("{} on sm_90a: wgmma, operands by TMA; {:.0f} {}x{} tiles in {:.0f} "
                      "round{} on {} SMs: the least rounds x tile time of 4 tile shapes",
                      dtypeName(s.dtype), bestGrid.tiles, s.bm, s.bn, bestGrid.rounds,
                      bestGrid.rounds == 1 ? "" : "s", target.smCount);
}

GemmSpec makeGemmSpec(const Node *mm, const Target &target, bool allowTf32, const Node *sibling) {
  const Node *a = mm->operand(0).node, *b = mm->operand(1).node;
  GemmSpec s;
  s.dtype = mm->dtype();
  s.allowTf32 = allowTf32;
  s.dual = sibling != nullptr;
  s.transA = mm->matmulAttrs().transA;
  s.transB = mm->matmulAttrs().transB;
  const Shape &so = mm->shape();
  size_t ro = so.size();
  s.M = so[ro - 2];
  s.N = so[ro - 1];
  s.K = s.transA ? a->shape()[a->shape().size() - 2] : a->shape().back();
  s.batchShape.assign(so.begin(), so.end() - 2);
  s.strideA = batchStrides(a->shape(), s.batchShape);
  s.strideB = batchStrides(b->shape(), s.batchShape);
  // The kernels hold M, N and K (and tile coordinates) in 32-bit ints: refuse what they
  // cannot index here, naming the matmul, instead of failing inside NVRTC.
  for (auto [dim, v] : {std::pair<const char *, int64_t>{"M", s.M}, {"N", s.N}, {"K", s.K}})
    if (v >= (int64_t(1) << 31))
      fail("matmul '{}' ({} x {}): {} = {} is 2^31 or more; the GEMM kernels index M, N and K "
           "with 32-bit integers",
           nodeLabel(mm), a->type().str(), b->type().str(), dim, v);
  // Generated kernels index C, A and B with 64-bit offsets: keep every product of sizes
  // well inside int64 (a fuzzed [2^48, K] x [K, 2^48] overflowed M * N).
  if (double(s.M) * double(s.N) * std::max(1.0, double(s.batch())) > 0x1p48 ||
      double(s.M) * double(s.K) > 0x1p48 || double(s.K) * double(s.N) > 0x1p48)
    fail("matmul '{}': {}x{}x{} (batch {}) is beyond the 2^48 elements a generated GEMM indexes",
         mm->name(), s.M, s.N, s.K, s.batch());
  if (s.batch() > 65535)
    fail("matmul '{}': {} batches exceed the 65535 a launch can hold", mm->name(), s.batch());

  bool half = s.dtype != DType::F32;
  // Kernel choice only compares sizes: in double, so a huge (fuzzed) shape cannot overflow.
  double tiles128 = double((s.M + 127) / 128) * double((s.N + 127) / 128) * double(s.batch());
  if (s.dual) {
    // One kernel computes two products only as the Hopper wgmma kernel: the fusion pass
    // asked siblingGemmSupport before it made the pair one region.
    if (FusionDecision d = siblingGemmSupport(mm, sibling, target, allowTf32); !d)
      fail("internal: matmuls '{}' and '{}' as one kernel: {}", nodeLabel(mm), nodeLabel(sibling),
           d.explain());
    chooseWgmmaTile(s, target);
    s.why += fmt::format("; with {}, which reads the same A: two products per tile, both "
                         "joined in the epilogue and neither stored",
                         nodeLabel(sibling));
  } else if (decodeApplies(s, target)) {
    chooseDecode(s, target); // M <= 16, f16/bf16, sm >= 80: tensor cores (DecodeGemm.cpp)
  } else if (s.M <= 16) {
    s.kernel = GemmKernel::Gemv;
    s.warpsN = 8;
    if (s.transB) {
      // A warp per 4 columns, lanes along K (contiguous): 4 independent 16-byte loads.
      s.bn = 4 * s.warpsN;
    } else {
      // Threads own 8 contiguous columns and a slice of K; fewer columns per block when
      // the grid would not give every SM two blocks.
      // 512 threads for few rows; above 8 rows the M x 8 accumulators need more than the
      // 128 registers a 512-thread block allows, so 256.
      s.warpsN = s.M > 8 ? 8 : 16;
      s.bn = double((s.N + 63) / 64) * double(s.batch()) >= 2.0 * target.smCount ? 64 : 32;
    }
    s.why =
        fmt::format("M={} <= 16: memory-bound on the {:.0f} weight bytes, streamed once "
                    "({:.0f} blocks)",
                    s.M, double(s.K) * double(s.N) * double(dtypeSize(s.dtype)) * double(s.batch()),
                    double((s.N + s.bn - 1) / s.bn) * double(s.batch()));
  } else if (std::string no = wgmmaRefusal(s);
             (half || s.allowTf32) && target.sm == 90 && target.archSpecific && no.empty()) {
    chooseWgmmaTile(s, target);
    if (!half)
      s.why += "; TF32 allowed: wgmma k8 reads the f32 operands as TF32 (10-bit mantissa), f32 "
               "accumulation";
  } else if (bool tf32 = !half && s.allowTf32; (half || tf32) && target.sm >= 80) {
    // mma.sync; TF32 only where the user allowed it.
    configureTensorCore(s, target, tiles128 >= double(target.smCount), 4);
    if (tf32)
      s.why += "; TF32 allowed: inputs rounded to a 10-bit mantissa as they are read, "
               "mma.sync m16n8k8, f32 accumulation";
    if (target.sm == 90)
      s.why +=
          target.archSpecific ? "; not wgmma: " + no : "; not wgmma: portable sm_90, not sm_90a";
  } else {
    s.kernel = GemmKernel::Simt;
    s.bm = s.bn = 64;
    s.bk = 16;
    s.warpsM = 8;
    if (half)
      s.why = fmt::format("{} on sm_{} < 80: no bf16/f16 mma.sync, FFMA tiles",
                          dtypeName(s.dtype), target.sm);
    else if (s.allowTf32)
      s.why = fmt::format("f32 on sm_{} < 80: no TF32 mma.sync, exact f32 FFMA tiles", target.sm);
    else
      s.why = "f32: exact f32 FFMA tiles (no TF32 unless asked: --tf32)";
  }
  return s;
}

FusionDecision siblingGemmSupport(const Node *a, const Node *b, const Target &target,
                                  bool allowTf32) {
  std::string what = fmt::format("{} and {} read the same A, but", nodeLabel(a), nodeLabel(b));
  if (a->dtype() == DType::F32)
    return FusionDecision::forbid(
        fmt::format("{} one kernel computes two products only in f16/bf16", what));
  if (target.sm != 90 || !target.archSpecific)
    return FusionDecision::forbid(fmt::format(
        "{} one kernel computes two products only on sm_90a (wgmma); the target is {}", what,
        compileArch(target)));
  // The problem and its single kernel; a problem no GEMM kernel takes (a dim of 2^31) is
  // refused here with its reason and again, as an error, when its own kernel is built.
  GemmSpec s;
  try {
    s = makeGemmSpec(a, target, allowTf32);
  } catch (const Error &e) {
    return FusionDecision::forbid(fmt::format("{} {}", what, e.what()));
  }
  if (decodeApplies(s, target))
    return FusionDecision::forbid(fmt::format(
        "{} M = {} takes the decode kernel, which computes one product (each streams its own "
        "weights; the stored product is {})",
        what, s.M, formatBytes(double(s.M) * double(s.N) * double(s.batch()) * dtypeSize(s.dtype))));
  if (std::string no = wgmmaRefusal(s); !no.empty())
    return FusionDecision::forbid(
        fmt::format("{} two products need the wgmma kernel, and it refuses: {}", what, no));
  return FusionDecision::allow();
}

SiblingGemmPolicy siblingGemmPolicy(const Target &target, bool allowTf32) {
  return [target, allowTf32](const Node *a, const Node *b) {
    return siblingGemmSupport(a, b, target, allowTf32);
  };
}

} // namespace kfuse::codegen
