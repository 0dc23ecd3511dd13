#pragma once
/// Composite functions of the builder API: softmax, log_softmax, rms_norm, layer_norm and
/// var_mean, each expanded into the primitive ops (reductions, elementwise ops, casts) the way
/// PyTorch and Hugging Face spell them, so a graph built here computes what the model does:
///
///   Value p = softmax(logits);                 // amax, sub, exp, sum, div over the last axis
///   Value h = rms_norm(x, w, 1e-6);            // LlamaRMSNorm: f32 inside, weight * cast(...)
///   Value y = layer_norm(x, w, b, 1e-5);       // torch.nn.functional.layer_norm
///   auto [var, mean] = var_mean(x, {-1});      // torch.var_mean, correction=1
///
/// Every function checks all its arguments before it adds a node, and throws kfuse::Error
/// naming the function and the shapes ("rms_norm: w f32[7] must be [8], the last dim of x
/// f32[4, 8]"); a refused call leaves the graph as it was. The nodes are unnamed, like every
/// builder function's. Included by ir/Builder.h.
#include "ir/Graph.h"

#include <utility>

namespace kfuse {

/// exp(x - amax(x)) / sum(exp(x - amax(x))) over `axis` (negative counts from the end), with
/// the reductions' keepdims=true so the results broadcast back: torch.softmax(x, dim=axis).
/// A row of all -inf gives NaN, as in PyTorch. Result: x's dtype and shape.
Value softmax(Value x, int64_t axis = -1);

/// (x - m) - log(sum(exp(x - m))) with m = amax(x) over `axis`: torch.log_softmax.
Value log_softmax(Value x, int64_t axis = -1);

/// Hugging Face's LlamaRMSNorm over the last axis: h = x (cast to f32 when x is f16 or bf16),
/// h * rsqrt(mean(h * h) + eps), cast back to x's dtype, then w * that. `w` is [N] of x's
/// dtype, N = x's last dim. Without `w`: no scale (the cast back stays).
Value rms_norm(Value x, Value w, double eps = 1e-6);
Value rms_norm(Value x, double eps = 1e-6);

/// torch.nn.functional.layer_norm over the last axis: d = h - mean(h),
/// d * rsqrt(mean(d * d) + eps) * w + b, h = x. For f16/bf16 x everything is computed in f32
/// (x, w and b cast to f32, the result cast back), as PyTorch's kernels do. `w` and `b` are
/// [N] of x's dtype; the overloads leave out b, or both.
Value layer_norm(Value x, Value w, Value b, double eps = 1e-5);
Value layer_norm(Value x, Value w, double eps = 1e-5);
Value layer_norm(Value x, double eps = 1e-5);
/// The general form, as matmul's attributes are given: `layer_norm(x, {.b = bias})` (a
/// shift without a scale); a null w or b is left out.
struct LayerNormOptions {
  Node *w = nullptr;
  Node *b = nullptr;
  double eps = 1e-5;
};
Value layer_norm(Value x, const LayerNormOptions &o);

/// torch.var_mean(x, axes, correction, keepdims): {variance, mean} over `axes`. The variance
/// is sum((x - mean)^2) / max(0, N - correction), N the number of elements reduced (a
/// divisor of 0 gives inf or NaN, as in PyTorch); correction 1 is the unbiased estimate, 0
/// the population variance. For f16/bf16 x computed in f32, both results cast back to x's
/// dtype.
std::pair<Value, Value> var_mean(Value x, IntList axes, double correction = 1.0,
                                 bool keepdims = false);

} // namespace kfuse
