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
  /// > 0: each repetition is queued behind a kernel that keeps the GPU busy for this many
  /// microseconds, so the host's time to submit the start event and the work is not
  /// counted (the GPU time of the work, launch latency on the GPU included). 0: the GPU is
  /// idle when the start event is submitted, so the time includes the host's submission of
  /// the work (the per-call latency a caller without CUDA graphs or a full queue sees).
  double queueBehindUs = 0;
};

/// Median milliseconds of `work`, which enqueues its launches on `stream`.
double medianMs(CUstream stream, const std::function<void()> &work, const TimingOptions &o = {});

/// Median milliseconds of copying `bytes` from one device buffer to another (a copy moves
/// 2 * bytes: each byte read once and written once).
double copyMs(size_t bytes, const TimingOptions &o = {});

} // namespace kfuse::runtime
