#include "codegen/GemmSpec.h"

#include "codegen/DecodeGemm.h"

#include "ir/Error.h"

#include <algorithm>
#include <fmt/format.h>

namespace kfuse::codegen {

const char *gemmKernelName(GemmKernel k) {
  switch (k) {
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

size_t GemmSpec::sharedBytes() const {
  if (kernel == GemmKernel::Decode)
    return decodeSharedBytes(*this);
  if (kernel != GemmKernel::TensorCore)
    return 0;
  // Rows padded by 8 elements (16 bytes) so ldmatrix's eight row reads hit distinct banks.
  size_t a = transA ? size_t(bk) * (bm + 8) : size_t(bm) * (bk + 8);
  size_t b = transB ? size_t(bn) * (bk + 8) : size_t(bk) * (bn + 8);
  return stages * (a + b) * 2;
}

std::string GemmSpec::describe() const {
  switch (kernel) {
  case GemmKernel::TensorCore:
    return fmt::format("tensor-core mma.sync {}x{}x{}, {} stages, {} warps", bm, bn, bk, stages,
                       warpsM * warpsN);
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

GemmSpec makeGemmSpec(const Node *mm, const Target &target) {
  const Node *a = mm->operand(0).node, *b = mm->operand(1).node;
  GemmSpec s;
  s.dtype = mm->dtype();
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
  if (decodeApplies(s, target)) {
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
  } else if (half && target.sm >= 80) {
    s.kernel = GemmKernel::TensorCore;
    s.bk = 32;
    s.stages = 4;
    if (tiles128 >= double(target.smCount)) {
      s.bm = s.bn = 128;
      s.warpsM = 2;
      s.warpsN = 4;
      s.why = fmt::format("{} on sm_{}: tensor cores; {:.0f} 128x128 tiles fill {} SMs",
                          dtypeName(s.dtype), target.sm, tiles128, target.smCount);
    } else {
      s.bm = s.bn = 64;
      s.warpsM = s.warpsN = 2;
      s.why =
          fmt::format("{} on sm_{}: tensor cores; only {:.0f} 128x128 tiles for {} SMs, so 64x64",
                      dtypeName(s.dtype), target.sm, tiles128, target.smCount);
    }
  } else {
    s.kernel = GemmKernel::Simt;
    s.bm = s.bn = 64;
    s.bk = 16;
    s.warpsM = 8;
    s.why = half ? fmt::format("{} on sm_{} < 80: no bf16/f16 mma.sync, FFMA tiles",
                               dtypeName(s.dtype), target.sm)
                 : std::string("f32: exact f32 FFMA tiles (no TF32 unless asked)");
  }
  return s;
}

} // namespace kfuse::codegen
