// The C API's reductions and composites (include/kfuse/kfuse.h): kfuse_graph_add_reduction
// through Graph::reduce, and the composites of ir/Composites.h, each checking its handles
// and eps before the C++ function checks shapes and dtypes (a kfuse::Error from there is
// KFUSE_ERROR_TYPE).
#include "capi/Api.h"

#include "ir/Builder.h"

#include <cmath>

using namespace kfuse;
using capi::failWith;
using capi::graphArg;
using capi::guard;
using capi::need;
using capi::quote;

namespace {

IntList axesArg(std::string_view fn, const int64_t *axes, size_t n) {
  if (n && !axes)
    failWith(KFUSE_ERROR_INVALID_ARGUMENT, "{}: axes is NULL (n_axes is {})", fn, n);
  return IntList(axes, axes + n);
}

void epsArg(std::string_view fn, double eps) {
  if (!std::isfinite(eps) || eps < 0 || eps > 3.4028234663852886e38)
    failWith(KFUSE_ERROR_INVALID_ARGUMENT,
             "{}: eps must be a finite number >= 0 that fits f32, got {}", fn, eps);
}

/// A tensor of `G`, or nullptr for a NULL handle (a parameter left out).
Node *optionalTensor(kfuse_graph_s &G, kfuse_value v, std::string_view what) {
  return v ? G.tensor(v, what) : nullptr;
}

} // namespace

extern "C" {

kfuse_status kfuse_graph_add_reduction(kfuse_graph g, const char *op, kfuse_value x,
                                       const int64_t *axes, size_t n_axes, int keepdims,
                                       kfuse_value *out) {
  return guard("kfuse_graph_add_reduction", KFUSE_ERROR_TYPE, [&] {
    kfuse_graph_s &G = graphArg(g);
    std::optional<OpKind> k = parseOpKind(need(op, "op"));
    if (!k)
      failWith(KFUSE_ERROR_UNKNOWN_OP, "unknown op '{}' (the reductions are sum, mean, amax, "
                                       "amin)",
               quote(op));
    if (!isReduction(*k))
      failWith(KFUSE_ERROR_INVALID_ARGUMENT, "'{}' is not a reduction (sum, mean, amax, amin); "
                                             "use kfuse_graph_add_op",
               quote(op));
    Node *a = G.tensor(x, fmt::format("{}: x", opName(*k)));
    need(out, "out");
    IntList list = axesArg(opName(*k), axes, n_axes);
    *out = G.wrap(G.graph->reduce(*k, a, std::move(list), keepdims != 0).node());
  });
}

kfuse_status kfuse_graph_add_softmax(kfuse_graph g, kfuse_value x, int64_t axis,
                                     kfuse_value *out) {
  return guard("kfuse_graph_add_softmax", KFUSE_ERROR_TYPE, [&] {
    kfuse_graph_s &G = graphArg(g);
    Node *a = G.tensor(x, "softmax: x");
    need(out, "out");
    *out = G.wrap(softmax(a, axis).node());
  });
}

kfuse_status kfuse_graph_add_log_softmax(kfuse_graph g, kfuse_value x, int64_t axis,
                                         kfuse_value *out) {
  return guard("kfuse_graph_add_log_softmax", KFUSE_ERROR_TYPE, [&] {
    kfuse_graph_s &G = graphArg(g);
    Node *a = G.tensor(x, "log_softmax: x");
    need(out, "out");
    *out = G.wrap(log_softmax(a, axis).node());
  });
}

kfuse_status kfuse_graph_add_rms_norm(kfuse_graph g, kfuse_value x, kfuse_value w, double eps,
                                      kfuse_value *out) {
  return guard("kfuse_graph_add_rms_norm", KFUSE_ERROR_TYPE, [&] {
    kfuse_graph_s &G = graphArg(g);
    Node *a = G.tensor(x, "rms_norm: x");
    Node *wn = optionalTensor(G, w, "rms_norm: w");
    need(out, "out");
    epsArg("rms_norm", eps);
    *out = G.wrap((wn ? rms_norm(a, wn, eps) : rms_norm(a, eps)).node());
  });
}

kfuse_status kfuse_graph_add_layer_norm(kfuse_graph g, kfuse_value x, kfuse_value w,
                                        kfuse_value b, double eps, kfuse_value *out) {
  return guard("kfuse_graph_add_layer_norm", KFUSE_ERROR_TYPE, [&] {
    kfuse_graph_s &G = graphArg(g);
    Node *a = G.tensor(x, "layer_norm: x");
    Node *wn = optionalTensor(G, w, "layer_norm: w");
    Node *bn = optionalTensor(G, b, "layer_norm: b");
    need(out, "out");
    epsArg("layer_norm", eps);
    *out = G.wrap(layer_norm(a, {.w = wn, .b = bn, .eps = eps}).node());
  });
}

kfuse_status kfuse_graph_add_var_mean(kfuse_graph g, kfuse_value x, const int64_t *axes,
                                      size_t n_axes, double correction, int keepdims,
                                      kfuse_value *var, kfuse_value *mean) {
  return guard("kfuse_graph_add_var_mean", KFUSE_ERROR_TYPE, [&] {
    kfuse_graph_s &G = graphArg(g);
    Node *a = G.tensor(x, "var_mean: x");
    need(var, "var");
    need(mean, "mean");
    IntList list = axesArg("var_mean", axes, n_axes);
    auto [v, m] = var_mean(a, std::move(list), correction, keepdims != 0);
    *var = G.wrap(v.node());
    *mean = G.wrap(m.node());
  });
}

} // extern "C"
