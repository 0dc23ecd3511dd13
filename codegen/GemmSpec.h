#pragma once
/// GemmSpec: the matmul part of a kernel spec whose region holds a matmul (the rest of the
/// region is its elementwise epilogue, KernelSpec::ops after op 0). It fixes the problem
/// (dtype, transposes, M/N/K, broadcast batch strides) and the kernel chosen for it by
/// shape and architecture, with the tile and a one-line reason for the report.
#include "ir/FusionDecision.h"
#include "ir/Graph.h"
#include "passes/Pass.h"
#include "target/Target.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kfuse::codegen {

enum class GemmKernel : uint8_t {
  Wgmma,      ///< sm_90a: wgmma from TMA-staged shared memory, warp-specialised (f16/bf16)
  TensorCore, ///< mma.sync m16n8k16 (f16/bf16, f32 accumulation), cp.async multi-stage
  Simt,       ///< f32 FFMA tiles (exact f32, no TF32)
  Gemv,       ///< small M: streams the weights once with 16-byte loads
  Decode,     ///< M <= 16, f16/bf16: mma.sync on one 16-row tile, K split over a cluster
};
const char *gemmKernelName(GemmKernel k);

/// A TMA tensor map over one GEMM operand, for the runtime to encode (cuTensorMapEncodeTiled)
/// from the operand's device pointer: 3 dims (contiguous, rows, matrices of the batch), 128-
/// byte swizzle, out-of-range elements read as zero.
struct TmaOperand {
  uint64_t dims[3] = {0, 0, 0}; ///< elements
  uint64_t strides[2] = {0, 0}; ///< bytes between rows, between matrices
  uint32_t box[3] = {0, 0, 0};  ///< elements per copy (64 contiguous = 128 bytes)
};

struct GemmSpec {
  DType dtype = DType::F32;
  bool transA = false, transB = false;
  int64_t M = 0, N = 0, K = 0;
  /// Output batch dims (the matmul's shape without its last two) and, per dim, the element
  /// stride of A and B in that dim (0 where the operand broadcasts).
  Shape batchShape;
  std::vector<int64_t> strideA, strideB;
  int64_t batch() const { return numElements(batchShape); }

  GemmKernel kernel = GemmKernel::Simt;
  /// Tile: rows x cols of C per block, K per stage, pipeline stages, warps along M and N.
  /// Gemv: bn = columns per block, bk = unused; warpsN = warps per block.
  unsigned bm = 0, bn = 0, bk = 0, stages = 1, warpsM = 1, warpsN = 1;
  /// Decode: K slices, one CTA each, of a thread-block cluster along grid y (1: no split).
  unsigned ks = 1;
  /// Wgmma: the persistent grid (min(tiles, SMs) CTAs, each looping over tiles).
  unsigned ctas = 0;
  /// Decode (one matrix, no K split): stream-K. The ctas CTAs take equal contiguous ranges
  /// of the (column tile, k tile) units; a column tile cut between CTAs meets in a workspace
  /// (decodeWorkspaceBytes), the last CTA to arrive applying the epilogue.
  bool streamK = false;
  /// Wgmma: the two consumer warpgroups take whole 128-row tiles in turn (one's epilogue
  /// runs while the other's wgmma do), instead of 64 rows each of every tile.
  bool pingpong = false;
  /// Wgmma: CTAs per thread-block cluster (1 or 2): a cluster's CTAs take M-adjacent tiles
  /// and share B, each loading half of it by TMA multicast into both.
  unsigned cluster = 1;
  /// The user's policy for f32 (compiler::CompileOptions::allowTf32, `--tf32`): whether the
  /// kernel may round f32 inputs to TF32 for the tensor cores. Part of the problem (the
  /// tuning cache's key), not of the device.
  bool allowTf32 = false;
  /// Two products per tile (sibling matmuls, ir/KernelRegion.h): C = A B and C2 = A B2 with
  /// B2 (input 2) of B's type and layout; the epilogue receives both. Wgmma only
  /// (siblingGemmSupport says which problems).
  bool dual = false;
  std::string why; ///< one line: which kernel and why
  /// Wgmma: the tensor maps of A and B (kernel parameters before the pointers).
  TmaOperand tmaA, tmaB;

  /// Tensor maps the kernel takes before its pointers: 2 (A, B) for Wgmma, 3 with B2 when
  /// dual (B2 laid out as B: the same map encoded over input 2), 1 (B) for a Decode kernel
  /// streaming B by TMA, else 0.
  unsigned tensorMaps() const {
    return kernel == GemmKernel::Wgmma ? (dual ? 3 : 2)
                                       : kernel == GemmKernel::Decode && tmaB.box[0] ? 1 : 0;
  }
  /// B operands read per tile: 2 for a dual GEMM, else 1.
  unsigned products() const { return dual ? 2 : 1; }
  /// Wgmma: warpsM = consumer warpgroups (64 rows each), plus one producer warpgroup.
  unsigned threads() const {
    return kernel == GemmKernel::Wgmma ? 128 * (warpsM + 1) : 32 * warpsM * warpsN;
  }
  /// A tensor-core kernel (mma.sync or wgmma) on f32 inputs: it reads them as TF32 (only
  /// where allowed).
  bool tf32() const {
    return (kernel == GemmKernel::TensorCore || kernel == GemmKernel::Wgmma) && dtype == DType::F32;
  }
  size_t sharedBytes() const;
  /// "tensor-core mma.sync 128x128x32 x4 stages, 8 warps"
  std::string describe() const;
};

/// Blocks of `threads` threads and `sharedBytes` of shared memory one SM of `target` holds
/// at once, by shared memory (1 KB reserved per block) and threads (2048 per SM); at least 1.
unsigned blocksPerSM(const Target &target, size_t sharedBytes, unsigned threads);

/// The tensor map of an operand of `elemBytes`-byte elements (2, or 4 for TF32) stored [rows,
/// cols] per matrix: boxes of 128 bytes of columns (the swizzle width) by `boxRows` rows.
TmaOperand makeTmaOperand(uint64_t rows, uint64_t cols, uint64_t matrices, uint32_t boxRows,
                          unsigned elemBytes = 2);
/// Matrices an operand holds: 1 + the largest matrix index its batch strides reach (`mat`:
/// elements per matrix).
uint64_t operandMatrices(const GemmSpec &s, const std::vector<int64_t> &stride, int64_t mat);

/// A wgmma tile's share of the tensor-core rate it sustains, relative to the 128x256 tile:
/// the H200's at 4096^3, where every tile fills its rounds (device runs of 2026-12-03:
/// 128x256 180 us; 128x128 194 in 2-CTA clusters, 200 alone; 64x256 220; 64x128 244).
double wgmmaTileEfficiency(unsigned warpsM, unsigned bn, unsigned cluster);
/// The share of the device's dense 16-bit tensor rate (Target::flopsPerSecond) a GEMM kernel
/// sustains, each measured on the H200 at 4096^3 + bias + relu, after its tiles' rounds:
/// wgmma its tile's wgmmaTileEfficiency (x 0.47 for TF32: 384 us); mma.sync 0.413 in
/// f16/bf16 (493 us), 0.145 on TF32 (1.24 ms); exact f32 FFMA 0.032 (5.57 ms); 1 for the
/// memory-bound decode and gemv.
double gemmKernelRate(const GemmSpec &s);

/// The GEMM problem of matmul node `mm` and the kernel chosen for it on `target`, f32 on
/// TF32 tensor cores only where `allowTf32` (the user's policy). With `sibling` (a matmul
/// reading the same A, ir/KernelRegion.h's siblingMatmuls), a dual GEMM computing both.
GemmSpec makeGemmSpec(const Node *mm, const Target &target, bool allowTf32 = false,
                      const Node *sibling = nullptr);
/// Whether one kernel on `target` computes the products of sibling matmuls `a` and `b`: the
/// Hopper wgmma kernel does (two B tiles per stage, two accumulators); the reason names the
/// kernel chosen otherwise. The fusion pass's policy (passes/Pass.h), set by the driver.
FusionDecision siblingGemmSupport(const Node *a, const Node *b, const Target &target,
                                  bool allowTf32);
/// siblingGemmSupport as the fusion pass's policy, holding `target` and the TF32 policy by
/// value: every place that plans a graph for a target (compile(), `kfuse opt`, `kfuse dot
/// --fused`, buildReport) fuses with it, so each shows the plan that is compiled.
SiblingGemmPolicy siblingGemmPolicy(const Target &target, bool allowTf32 = false);

/// The kernel configurations makeGemmSpec picks among (and the autotuner tries): a Hopper
/// kernel of `warpsM` consumer warpgroups, BN columns and `stages` ring stages (`pingpong`:
/// two warpgroups taking 128x128 tiles in turn; `cluster` 2: B multicast to 2-CTA clusters);
/// a mma.sync kernel of 128x128 (`big`) or 64x64 tiles. The problem fields of `s` must be set.
/// A dual spec (two products) takes neither ping-pong nor clusters, and BN of 64 or 128.
void configureWgmma(GemmSpec &s, const Target &target, unsigned warpsM, unsigned bn,
                    unsigned stages, bool pingpong = false, unsigned cluster = 1);
void configureTensorCore(GemmSpec &s, const Target &target, bool big, unsigned stages);

} // namespace kfuse::codegen
