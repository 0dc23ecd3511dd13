#pragma once
// Graphs the GEMM codegen tests build: one matmul with a bias and relu epilogue, fused.
#include "ir/Builder.h"
#include "passes/Fusion.h"

#include <memory>

namespace kfuse {

/// relu(a b + bias) over a [M, K] (or [K, M] with trans_a) and b [K, N] (or [N, K] with
/// trans_b), bias [N], fused into one region.
inline std::unique_ptr<Graph> biasRelu(DType t, int64_t M, int64_t N, int64_t K, MatMulAttrs at = {}) {
  auto g = std::make_unique<Graph>("mbr");
  Value a = g->input("a", t, at.transA ? Shape{K, M} : Shape{M, K});
  Value b = g->input("b", t, at.transB ? Shape{N, K} : Shape{K, N});
  Value bias = g->input("bias", t, {N});
  g->output(relu(matmul(a, b, at) + bias));
  fuseGraph(*g);
  return g;
}

} // namespace kfuse
