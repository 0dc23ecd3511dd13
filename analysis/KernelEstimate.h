#pragma once
/// The time a generated kernel is expected to take on a device, for `kfuse report` and the
/// predictions of `kfuse run --bench`. It starts from the roofline of the traffic model
/// (max of bytes / bandwidth and FLOPs / rate, analysis/Traffic.h) and adds what the kernel's
/// launch shape costs:
///  - a GEMM's compute time stretched by its quantization: the share of the SMs its tiles keep
///    busy over the rounds they take (512 tiles on 132 SMs: 4 rounds, 0.97 busy) and the
///    share of the tiles' multiply-adds inside M x N x K (edge tiles compute padding);
///  - the GEMM kernel's share of the device's dense tensor rate it sustains (measured on the
///    H200, gemmKernelRate: a wgmma tile smaller than 128x256, mma.sync in 16 bits or TF32,
///    exact f32 FFMA);
///  - the device's fixed cost per kernel (Target::kernelSeconds: launch, the first loads'
///    latency, the drain of the last stores).
/// Not modelled: cache effects of tensors that fit in L2, and kernels overlapping in a CUDA graph.
#include "codegen/KernelSpec.h"
#include "target/Target.h"

#include <string>

namespace kfuse {

struct KernelEstimate {
  double seconds = 0;     ///< expected
  double roofSeconds = 0; ///< the roofline alone
  double busy = 1;        ///< GEMMs: share of the SMs the tiles keep busy, over their rounds
  double useful = 1;      ///< GEMMs: share of the tiles' multiply-adds inside the problem
  double rate = 1;        ///< GEMMs: the kernel's share of the tensor rate (gemmKernelRate)
  bool computeBound = false;
  std::string why; ///< "compute-bound: 137.4 GFLOP at 790 TFLOP/s / 0.97 busy (...) + 4 us"
};

/// `k` on `t`: its SMs for the tiles' rounds, its rates and fixed cost for the times.
KernelEstimate estimateKernel(const codegen::KernelSpec &k, const Target &t);

} // namespace kfuse
