#pragma once
/// The traffic model: bytes each kernel moves and FLOPs it does, and the time a device
/// would need at peak, max(bytes / bandwidth, flops / rate) + the device's fixed cost per
/// kernel, the rate a matmul's dtype's peak (Target::peakFlops: the 16-bit tensor rate,
/// exact f32 at the FFMA rate): analysis/KernelEstimate.h's estimate of a kernel without a
/// GEMM. Where the kernels were generated, applyEstimates puts their estimates in place.
///  - unfused plan: every op is its own kernel, reads each distinct operand tensor in full
///    (a broadcast operand counts its own size) and writes its result;
///  - fused plan: every kernel region reads each external tensor once and writes each value
///    that leaves it (read by another kernel, or a graph output).
/// FLOPs: elementwise ops 1 per output element, matmul 2*M*N*K*batch.
#include "ir/Graph.h"
#include "ir/Units.h"
#include "target/Target.h"

#include <string>
#include <vector>

namespace kfuse {

struct KernelTraffic {
  std::string name;
  std::string specName; ///< the name codegen gives the kernel (codegen/KernelSpec.h)
  size_t ops = 0;
  bool hasMatmul = false;
  DType matmulType = DType::F32; ///< its matmul's dtype: the peak FLOP rate it runs at
  int64_t bytesRead = 0;
  int64_t bytesWritten = 0;
  double flops = 0;
  double seconds = 0;     ///< predicted on the plan's device
  bool computeBound = false;
  int64_t bytes() const { return bytesRead + bytesWritten; }
  double intensity() const { return bytes() ? flops / double(bytes()) : 0.0; }
};

struct TrafficPlan {
  std::vector<KernelTraffic> kernels;
  int64_t bytesRead = 0, bytesWritten = 0;
  double flops = 0, seconds = 0;
  size_t launches() const { return kernels.size(); }
  int64_t bytes() const { return bytesRead + bytesWritten; }
};

double nodeFlops(const Node *n);
/// Every non-input op its own kernel (ignores kernel regions).
TrafficPlan unfusedTraffic(const Graph &g, const Target &d);
/// By kernel regions; a node outside every region counts as a kernel of one.
TrafficPlan fusedTraffic(const Graph &g, const Target &d);

/// Whether generating `g`'s kernels to estimate them is worth it: only a matmul or a
/// reduction makes a kernel's estimate differ from the model's roofline + fixed cost, and
/// graphs of more than 20,000 ops are left to the model (generating 10^6 one-op kernels
/// took 26 s and 3 GB more than the report itself).
bool estimatesDiffer(const Graph &g);

/// A generated kernel's expected time (analysis/KernelEstimate.h) by its name.
struct NamedEstimate {
  std::string name;
  double seconds = 0;
  bool computeBound = false;
};
/// Puts each kernel of `p` whose specName is named in `estimates` at its estimate and totals `p` again, so a
/// table, its totals and the expected times of the same kernels agree (the GEMM kernels'
/// quantization and rates are in the estimates, not in the model).
void applyEstimates(TrafficPlan &p, const std::vector<NamedEstimate> &estimates,
                    const Target &d);

} // namespace kfuse
