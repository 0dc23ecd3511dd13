#pragma once
/// What a computed value may differ from the reference interpreter's by, op by op: a
/// first-order forward error analysis. A dot product's rounding error scales with the terms
/// it summed, sum |a_k||b_k|, not with its result, which cancellation can leave near zero
/// (a feed-forward block's down projection with K = 18944: outputs near 1e5, each rounded to
/// bf16's spacing of 512, while one element is -4). E(n), an absolute error scale per
/// element, from the inputs (exact: the reference binds the same rounded values) to the
/// outputs:
///   - every op's own rounding to its dtype: u * |value|, u = 2^-8 (bf16), 2^-11 (f16),
///     2^-24 (f32), as if every value were stored;
///   - add, sub: E(a) + E(b); mul: E(a)|b| + |a|E(b); div: (E(a) + |a/b| E(b)) / |b|;
///     max, min, amax, amin: the larger E; pow: |v| (|b| E(a) / |a| + |log|a|| E(b));
///   - matmul: E(A) @ |B| + |A| @ E(B) + sqrt(K) 2^-23 |A| @ |B| (f32 accumulation in
///     another order); sum and mean: the sum or mean of E plus sqrt(n) 2^-23 times that of
///     |x|;
///   - one operand: E times the op's largest slope: exp |exp(x)|, log 1/|x|, sqrt
///     1/(2 sqrt(x)), rsqrt |v|^3/2, gelu, gelu_tanh and silu 1.2, the rest (neg, abs, relu,
///     tanh, sigmoid, cast) 1.
#include "ir/Compare.h"
#include "ir/Graph.h"
#include "ir/Tensor.h"

#include <memory>
#include <string>
#include <vector>

namespace kfuse {

/// A graph with `g`'s inputs whose outputs are the error scales E of `g`'s outputs, in
/// order, as f32 (the reference interpreter evaluates it).
std::unique_ptr<Graph> errorGraph(const Graph &g);

/// How many times E an element may be off, beyond the dtype tolerance: the analysis is
/// first order and worst case per op.
inline constexpr double kErrorMargin = 2.0;

/// The shared comparison behind `kfuse run --check`, runtime::Program::check and the tests:
/// every output of `got` against the reference interpreter's on `inputs`, which rounds the
/// values whose node ids are in `stored` (what the compiled plan stores). Per element
///   |got - ref| <= elem * (1 + |ref|) + kErrorMargin * E
/// and over an output ||got - ref|| <= norm * ||ref|| + kErrorMargin * ||E||, where elem and
/// norm are the tolerances (Tolerance::of) of the output's dtype or `loosest`, whichever is
/// looser. "" when every output matches, else which output and element and by how much.
std::string checkOutputs(const Graph &g, const std::vector<Tensor> &inputs,
                         const std::vector<Tensor> &got, const std::vector<unsigned> &stored,
                         DType loosest = DType::F32);

} // namespace kfuse
