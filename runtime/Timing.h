#pragma once
/// Timing on the device: CUDA events around work enqueued on a stream, after warm-up
/// runs, the median of many repetitions (GPU.md's method); and the roof it is compared
/// with, a device-to-device copy measured in the same process.
#include "runtime/Driver.h"

#include <cstddef>
#include <functional>

namespace kfuse::runtime {

struct TimingOptions {
  int warmup = 3;
  int reps = 30;
};

/// Median milliseconds of `work`, which enqueues its launches on `stream`.
double medianMs(CUstream stream, const std::function<void()> &work, const TimingOptions &o = {});

/// Median milliseconds of copying `bytes` from one device buffer to another (a copy moves
/// 2 * bytes: each byte read once and written once).
double copyMs(size_t bytes, const TimingOptions &o = {});

} // namespace kfuse::runtime
