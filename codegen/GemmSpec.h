#pragma once
/// GemmSpec: the matmul part of a kernel spec whose region holds a matmul (the rest of the
/// region is its elementwise epilogue, KernelSpec::ops after op 0). It fixes the problem
/// (dtype, transposes, M/N/K, broadcast batch strides) and the kernel chosen for it by
/// shape and architecture, with the tile and a one-line reason for the report.
#include "ir/Graph.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kfuse::codegen {

/// What the kernels are generated for (the device's, or --arch for `kfuse compile`).
struct Target {
  unsigned sm = 90;       ///< compute capability * 10
  unsigned smCount = 132; ///< multiprocessors, for filling the device
};

enum class GemmKernel : uint8_t {
  TensorCore, ///< mma.sync m16n8k16 (f16/bf16, f32 accumulation), cp.async multi-stage
  Simt,       ///< f32 FFMA tiles (exact f32, no TF32)
  Gemv,       ///< small M: streams the weights once with 16-byte loads
  Decode,     ///< M <= 16, f16/bf16: mma.sync on one 16-row tile, K split over a cluster
};
const char *gemmKernelName(GemmKernel k);

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
  std::string why; ///< one line: which kernel and why

  unsigned threads() const { return 32 * warpsM * warpsN; }
  size_t sharedBytes() const;
  /// "tensor-core mma.sync 128x128x32 x4 stages, 8 warps"
  std::string describe() const;
};

/// The GEMM problem of matmul node `mm` and the kernel chosen for it on `target`.
GemmSpec makeGemmSpec(const Node *mm, const Target &target);

} // namespace kfuse::codegen
