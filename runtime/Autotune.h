#pragma once
/// Autotune: measures every configuration a plan's GEMM kernels could take on this device
/// and keeps the fastest. Each distinct GEMM problem's candidates (codegen/GemmTuning.h)
/// are generated as one program, compiled once, and launched one by one on the same
/// random inputs (CUDA events, the median of many); the winner is written to the disk
/// cache (KFUSE_CACHE_DIR, atomically), so the next run of the same problem on the same
/// device and kfuse takes it without measuring.
///
/// The compiler driver calls it between planning and codegen (CompileOptions::tuner):
///
///   o.tuner = [&](const auto &kernels) { return runtime::autotuneGemms(d, kernels, t, &log); };
#include "codegen/GemmTuning.h"
#include "codegen/KernelSpec.h"
#include "runtime/Driver.h"

#include <string>
#include <vector>

namespace kfuse::runtime {

struct AutotuneResult {
  std::string kernel; ///< the plan's kernel (the first with this problem)
  std::string key;    ///< codegen::gemmProblemKey
  struct Tried {
    std::string config; ///< describe()
    double us;          ///< median; < 0 where the launch failed
  };
  std::vector<Tried> tried; ///< in candidate order: [0] is the heuristic's choice
  size_t chosen = 0;        ///< index into tried
  bool fromCache = false;   ///< read from the disk cache (tried then holds only the winner)
};

struct AutotuneOptions {
  int reps = 20;         ///< timed launches per candidate (after 3 warm-up launches)
  bool useCache = true;  ///< false: measure again and overwrite the cached choice
};

/// The tuned choices for every GEMM kernel of `kernels` (a plan's, as the driver built them
/// for `t`, the device's target) on `d`.
codegen::GemmTuning autotuneGemms(Driver &d, const std::vector<codegen::KernelSpec> &kernels,
                                  const Target &t,
                                  std::vector<AutotuneResult> *results = nullptr,
                                  const AutotuneOptions &o = {});

/// The disk cache file of a problem's choice on device `deviceName` (for tests).
std::string autotuneCachePath(const std::string &key, const std::string &deviceName);

} // namespace kfuse::runtime
