#include "ir/Composites.h"

#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Reduction.h"

#include <cmath>
#include <string_view>

namespace kfuse {

namespace {

bool is16Bit(DType t) { return t == DType::F16 || t == DType::BF16; }

/// `axes` checked against x for reduction `k` as the composite `fn` will reduce it; the
/// reduction's own message, with `fn` in place of the op's name ("softmax: axis 2 is out of
/// range for operand f32[4, 8] ...").
AxisMask checkedAxes(std::string_view fn, OpKind k, Value x, const IntList &axes) {
  try {
    return reductionMask(k, x.type(), axes);
  } catch (const Error &e) {
    std::string_view msg = e.what();
    std::string_view op = opName(k);
    if (msg.substr(0, op.size() + 2) == std::string(op) + ": ")
      msg.remove_prefix(op.size() + 2);
    fail("{}: {}", fn, msg);
  }
}

/// The reduced values of x over `mask` fit a tensor: reducing an empty axis keeps the other
/// dims, whose product may pass 2^48 ([2^40, 0, 2^40] -> [2^40, 1, 2^40]). Every other
/// intermediate of a composite has x's shape or this one, so checking it first means no
/// node is added by a call that fails.
void checkReducedShape(std::string_view fn, Value x, const AxisMask &mask) {
  checkShape(fn, reducedShape(x.type().shape, mask, true));
}

/// x has a last axis to normalize over; returns its size.
int64_t lastDim(std::string_view fn, Value x) {
  if (x.type().rank() == 0)
    fail("{}: x {} has no last axis to normalize over (rank 0)", fn, x.type().str());
  checkReducedShape(fn, x, checkedAxes(fn, OpKind::Mean, x, {-1}));
  return x.type().shape.back();
}

/// A [N] parameter (weight or bias) of x's dtype, N = x's last dim.
void checkParam(std::string_view fn, std::string_view what, Value p, Value x) {
  const TensorType &pt = p.type(), &xt = x.type();
  if (&p.graph() != &x.graph())
    fail("{}: {} belongs to another graph ('{}') than x ('{}')", fn, what,
         excerpt(p.graph().name()), excerpt(x.graph().name()));
  if (pt.rank() != 1 || pt.shape[0] != xt.shape.back())
    fail("{}: {} {} must be [{}], the last dim of x {}", fn, what, pt.str(), xt.shape.back(),
         xt.str());
  if (pt.dtype != xt.dtype)
    fail("{}: {} {} must have x's dtype {} (x {}); cast it", fn, what, pt.str(),
         dtypeName(xt.dtype), xt.str());
}

void checkEps(std::string_view fn, double eps) {
  if (!std::isfinite(eps) || eps < 0 || eps > 3.4028234663852886e38)
    fail("{}: eps must be a finite number >= 0 that fits f32, got {}", fn, eps);
}

/// x - amax(x) over `axis`, keepdims: the shifted logits of softmax and log_softmax.
Value shifted(std::string_view fn, Value x, int64_t axis) {
  if (x.type().rank() == 0)
    fail("{}: x {} has no axis to reduce (rank 0)", fn, x.type().str());
  checkReducedShape(fn, x, checkedAxes(fn, OpKind::Amax, x, {axis}));
  return x - amax(x, {axis}, true);
}

} // namespace

Value softmax(Value x, int64_t axis) {
  Value e = exp(shifted("softmax", x, axis));
  return e / sum(e, {axis}, true);
}

Value log_softmax(Value x, int64_t axis) {
  Value d = shifted("log_softmax", x, axis);
  return d - log(sum(exp(d), {axis}, true));
}

namespace {
/// LlamaRMSNorm, `w` null for no weight.
Value rmsNorm(Value x, Node *w, double eps) {
  lastDim("rms_norm", x);
  if (w)
    checkParam("rms_norm", "w", w, x);
  checkEps("rms_norm", eps);
  DType dt = x.type().dtype;
  Value h = is16Bit(dt) ? cast(x, DType::F32) : x;
  Value variance = mean(h * h, {-1}, true);
  Value y = h * rsqrt(variance + eps);
  if (is16Bit(dt))
    y = cast(y, dt);
  return w ? Value(w) * y : y;
}

/// layer_norm, `w`/`b` null when left out.
Value layerNorm(Value x, Node *w, Node *b, double eps) {
  lastDim("layer_norm", x);
  if (w)
    checkParam("layer_norm", "w", w, x);
  if (b)
    checkParam("layer_norm", "b", b, x);
  checkEps("layer_norm", eps);
  DType dt = x.type().dtype;
  bool wide = is16Bit(dt);
  auto in = [&](Value v) { return wide ? cast(v, DType::F32) : v; };
  Value h = in(x);
  Value d = h - mean(h, {-1}, true);
  Value y = d * rsqrt(mean(d * d, {-1}, true) + eps);
  if (w)
    y = y * in(w);
  if (b)
    y = y + in(b);
  return wide ? cast(y, dt) : y;
}
} // namespace

Value rms_norm(Value x, Value w, double eps) { return rmsNorm(x, w.node(), eps); }
Value rms_norm(Value x, double eps) { return rmsNorm(x, nullptr, eps); }

Value layer_norm(Value x, Value w, Value b, double eps) {
  return layerNorm(x, w.node(), b.node(), eps);
}
Value layer_norm(Value x, Value w, double eps) { return layerNorm(x, w.node(), nullptr, eps); }
Value layer_norm(Value x, double eps) { return layerNorm(x, nullptr, nullptr, eps); }
Value layer_norm(Value x, const LayerNormOptions &o) { return layerNorm(x, o.w, o.b, o.eps); }

std::pair<Value, Value> var_mean(Value x, IntList axes, double correction, bool keepdims) {
  AxisMask mask = checkedAxes("var_mean", OpKind::Mean, x, axes);
  checkReducedShape("var_mean", x, mask);
  if (!std::isfinite(correction))
    fail("var_mean: correction must be finite, got {} (x {})", correction, x.type().str());
  double n = 1;
  for (size_t d = 0; d < mask.size(); ++d)
    if (mask[d])
      n *= static_cast<double>(x.type().shape[d]);
  // PyTorch's divisor: N - correction, or 0 (inf or NaN) when that is not positive.
  double divisor = n > correction ? n - correction : 0.0;
  DType dt = x.type().dtype;
  bool wide = is16Bit(dt);
  Value h = wide ? cast(x, DType::F32) : x;
  Value m = mean(h, axes, true);
  Value d = h - m;
  Value var = sum(d * d, axes, keepdims) / divisor;
  Value mu = keepdims ? m : mean(h, axes, false);
  if (wide) {
    var = cast(var, dt);
    mu = cast(mu, dt);
  }
  return {var, mu};
}

} // namespace kfuse
