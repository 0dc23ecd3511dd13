#pragma once
/// The CUDA driver, opened at run time with dlopen("libcuda.so.1") so every kfuse binary
/// starts without one. Driver::get() returns nullptr (with the reason in
/// Driver::unavailableReason()) when no driver or no device exists; require() throws a
/// kfuse::Error saying so. Only cuda.h's types are used; no symbol is linked.
#include <cuda.h>
#include <string>

namespace kfuse::runtime {

struct Driver {
#define KF_CU_FN(name, ...) CUresult (*name)(__VA_ARGS__) = nullptr;
#include "runtime/DriverFunctions.def"

  CUdevice device = 0;
  CUcontext context = nullptr;
  std::string deviceName;
  int ccMajor = 0, ccMinor = 0, smCount = 0;
  /// sm_90+: the 2-CTA clusters of a kernel taking a whole SM (one CTA of 384 threads and
  /// 200 KB of shared memory per SM) the device holds at once, which can be fewer than
  /// smCount / 2 where a GPC has an odd number of SMs; 0 before sm_90 or when unknown.
  int clusterPairs = 0;

  /// The process-wide driver with the primary context of device 0 current, or nullptr.
  static Driver *get();
  static Driver &require();
  static const std::string &unavailableReason();
  /// "sm_90" for the device.
  std::string arch() const { return "sm_" + std::to_string(ccMajor * 10 + ccMinor); }
  /// Throws kfuse::Error "WHAT failed: CUDA_ERROR_..." unless r is CUDA_SUCCESS.
  void check(CUresult r, const char *what) const;
};

} // namespace kfuse::runtime
