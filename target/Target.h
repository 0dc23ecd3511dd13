#pragma once
/// The target model: every fact about the device that kfuse plans, generates code and
/// predicts for, in one value. Codegen reads its architecture, SMs, clusters and shared
/// memory; the traffic model and the kernel estimates read its bandwidth, FLOP rates and
/// fixed cost per kernel. User policy (TF32, tuning) is not here: compiler::CompileOptions.
///
/// Built in: h200 (the default everywhere: 4.19 TB/s measured copy bandwidth, 790 TFLOP/s
/// dense 16-bit, 4 us per kernel alone (0.9 us per further kernel of one CUDA graph:
/// graphKernelSeconds): the device copy's time over 134 MB - 2.15 GB moved,
/// 37.1 / 130 / 506 us measured on the H200 on 2026-12-03, is bytes / 4.19 TB/s + 4 us
/// within 3%; sm_90a, 132 SMs), h100 (the H100 SXM's data sheet: 3.35 TB/s, 989 TFLOP/s
/// dense bf16, sm_90a, 132 SMs; 4 us per kernel alone and 1.1 us per further kernel of one
/// graph, measured on an H100 on 2026-12-07), a100 (the A100 SXM 80 GB's:
/// 2.04 TB/s, 312 TFLOP/s, sm_80, 108 SMs) and seed (the worked numbers kfuse started
/// from: 3.35 TB/s and 1979 TFLOP/s, ridge 591 FLOP/byte, no fixed cost). Any other device
/// is written `NAME:BW_TBps:TFLOPs[:FIXED_us[:SMS]]`, e.g. `l40s:0.864:362:4:142` (sm_90a
/// and 132 SMs unless given; --arch or the GPU itself set the architecture).
#include "ir/DType.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kfuse {

struct Target {
  std::string name = "h200";

  // --- what kernels are generated for -------------------------------------------------
  unsigned sm = 90;       ///< compute capability * 10
  unsigned smCount = 132; ///< multiprocessors, for filling the device
  /// Whether features of exactly this architecture may be used (sm_90a: wgmma, setmaxnreg);
  /// the program is then compiled for "sm_90a", which runs only on compute capability 9.0.
  bool archSpecific = true;
  /// 2-CTA clusters of a whole-SM kernel the device holds at once (0: smCount / 2, where
  /// not measured); a persistent clustered grid larger than that runs in two waves.
  unsigned clusterPairs = 0;
  unsigned pairs() const { return clusterPairs ? clusterPairs : smCount / 2; }
  /// Shared memory one block may opt into, and one SM holds (by architecture).
  size_t sharedPerBlock() const;
  size_t sharedPerSM() const;

  // --- how fast it is -----------------------------------------------------------------
  double bytesPerSecond = 4.19e12; ///< memory bandwidth (the device copy's)
  double flopsPerSecond = 790e12;  ///< dense f16/bf16 tensor-core rate (f32 accumulation)
  /// Fixed cost of a kernel alone (one CUDA graph of one kernel): the graph's launch, the
  /// first loads' latency, the drain of the last stores.
  double kernelSeconds = 4e-6;
  /// Fixed cost of each further kernel of the same CUDA graph: the drain of one kernel and
  /// the start of the next (the graph's launch is paid once). h200: 0.9 us, from kfuse's
  /// unfused and fused plans of the same blocks on the H200 (bench/results/models.md, run 3:
  /// 0.85-1.16 us per further kernel of a few hundred KB, not the 4 us of a kernel alone);
  /// h100: 1.1 us (bench/graphgap/run.sh on an H100: 1.03-1.16 us). A custom device's
  /// further kernels cost what a kernel alone does (not measured).
  double graphKernelSeconds = 0.9e-6;
  /// The expected time of `kernels` kernels run as one CUDA graph, whose estimates alone
  /// (each with kernelSeconds) add up to `aloneSum`: the first pays kernelSeconds, each
  /// further one graphKernelSeconds.
  double graphSeconds(double aloneSum, size_t kernels) const {
    double saved = kernelSeconds - std::min(graphKernelSeconds, kernelSeconds);
    return kernels <= 1 ? aloneSum : aloneSum - double(kernels - 1) * saved;
  }
  /// The peak FLOP rate of a matmul in `t`: the 16-bit tensor rate for f16/bf16; for f32,
  /// half of it on TF32 tensor cores (`tf32`), else the FFMA rate (67/989 of it, the ratio
  /// of the H100/H200 data sheets' dense figures). Elementwise work uses the FFMA rate.
  double peakFlops(DType t, bool tf32 = false) const;
  /// FLOP per byte above which a 16-bit matmul is compute-bound.
  double ridge() const { return flopsPerSecond / bytesPerSecond; }
  double memorySeconds(double bytes) const { return bytes / bytesPerSecond; }
  double computeSeconds(double flops) const { return flops / flopsPerSecond; }
  /// The roofline at the 16-bit tensor rate: whichever of the two takes longer.
  double roofline(double bytes, double flops) const {
    return std::max(memorySeconds(bytes), computeSeconds(flops));
  }
};

/// A built-in name or "NAME:BW_TBps:TFLOPs[:FIXED_us[:SMS]]"; throws kfuse::Error naming
/// the accepted forms.
Target parseTarget(std::string_view spec);
std::vector<Target> builtinTargets();

/// `base` compiled for `arch` ("sm_90a": arch-specific, "sm_90": portable); throws
/// kfuse::Error for anything not of the form sm_<digits>[a] kfuse can generate for.
Target withArch(Target base, const std::string &arch);
/// The default device model on compute capability `sm` with `smCount` SMs, arch-specific
/// features where `archSpecific` (used on sm_90 only), `clusterPairs` 2-CTA clusters at once
/// (0: not measured): an A100 is targetFor(80, 108).
Target targetFor(unsigned sm, unsigned smCount, bool archSpecific = true,
                 unsigned clusterPairs = 0);
/// NVRTC's --gpu-architecture for `t`: "sm_90a" where sm_90's own features are in use.
std::string compileArch(const Target &t);

} // namespace kfuse
