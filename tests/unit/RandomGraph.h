#pragma once
/// Random graphs valid by construction, for differential and property tests of any stage
/// (the one generator shared by unit tests, GPU tests and fuzzers): broadcasting shapes with
/// size-1 dims on both sides of an op, values with several consumers, several outputs (some
/// also consumed), mixed dtypes joined by casts, odd sizes, and matmuls (trans_a/trans_b,
/// broadcast batch dims) with epilogues (bias, activation, residual, scale, cast).
///
/// With `reductions`, sum/mean/amax/amin over random axes (keepdims random, often the last
/// axis, and columns over axis 0) appear, mostly in the patterns models use: a result
/// broadcast back into its operand (x - amax(x), x - mean(x)), softmax (exp(x - amax(x)) /
/// sum(...), whose sum is >= 1), rms and layer norms (x * rsqrt(mean(x*x) + eps)); values
/// stay bounded (a sum covers at most a few hundred elements).
///
/// By default values stay bounded (no division by tensors, no pow, no log of negatives) so
/// numeric comparisons with a tolerance are meaningful; `unboundedOps` adds div, pow and raw
/// exp/log/sqrt/rsqrt, whose NaN/Inf/-0 results test bit-exact comparisons.
/// The same seed and options always give the same graph.
#include "ir/Graph.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace kfuse::test {

struct RandomGraphOptions {
  int minOps = 2;
  int maxOps = 16;
  int maxOutputs = 3;
  int maxDim = 6;       ///< most dims are in [1, maxDim]
  int maxRank = 3;      ///< rank of the base shape, at least 1
  bool oddSizes = true; ///< now and then a dim of 7, 9, 13 or 17 (never above maxDim * 3)
  bool matmuls = true;
  bool epilogues = true;    ///< matmul followed by bias / activation / residual / scale / cast
  bool batchMatmuls = true; ///< rank-3 matmuls whose batch dim broadcasts
  bool mixedDTypes = true;  ///< casts between dtypes; the first dtype is random
  bool unboundedOps = false;
  /// Reductions and the patterns around them (off by default: the GPU suites turn it on
  /// once codegen generates reductions).
  bool reductions = false;
  /// The dtypes to draw from; empty means all of f32, f16, bf16.
  std::vector<DType> dtypes;
};

std::unique_ptr<Graph> randomGraph(uint64_t seed, const RandomGraphOptions &opts = {});

/// Options for graphs the GPU elementwise kernels can run: no matmuls.
inline RandomGraphOptions elementwiseOptions() {
  RandomGraphOptions o;
  o.matmuls = false;
  return o;
}

} // namespace kfuse::test
