#pragma once
/// Every composite's reductions (ir/Composites.h) in one graph over [m, n] of dtype `t`:
/// residual + RMSNorm (both outputs), LayerNorm and log-softmax of x. The codegen tests
/// compile it for each form of reduce kernel (split rows, staged cluster rows) and read
/// every kernel's registers.
#include "ir/Builder.h"

namespace kfuse::test {

inline void addEveryComposite(Graph &g, DType t, int64_t m, int64_t n) {
  auto x = g.input("x", t, {m, n});
  auto h = x + g.input("r", t, {m, n});
  g.output(h);
  g.output(rms_norm(h, g.input("w", t, {n}), 1e-6));
  g.output(layer_norm(x, g.input("w2", t, {n}), g.input("b", t, {n}), 1e-5));
  g.output(log_softmax(x));
}

} // namespace kfuse::test
