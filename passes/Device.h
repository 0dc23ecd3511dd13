#pragma once
/// The devices the traffic model predicts for: peak memory bandwidth and peak FLOP rate,
/// and the fixed cost of one kernel (codegen/KernelEstimate.h adds it to the roofline).
/// Built in: h100 (3.35 TB/s, 1979 TFLOP/s: the seed's numbers, ridge 591 FLOP/byte; fixed
/// cost not measured, 0) and h200 (4.19 TB/s measured copy bandwidth, 790 TFLOP/s dense bf16,
/// 4 us per kernel: the device copy's time over 134 MB - 2.15 GB moved, 37.1 / 130 / 506 us
/// measured on the H200 on 2026-12-03, is bytes / 4.19 TB/s + 4 us within 3%). Any other
/// device is written `NAME:BW_TBps:TFLOPs[:FIXED_us]`, e.g. `a100:2.0:312` or `a100:2.0:312:5`.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace kfuse {

struct Device {
  std::string name;
  double bytesPerSecond = 0; ///< peak memory bandwidth
  double flopsPerSecond = 0; ///< peak FLOP rate
  double kernelSeconds = 0;  ///< fixed cost per kernel: launch, first loads, last stores
  /// FLOP per byte above which a kernel is compute-bound.
  double ridge() const { return flopsPerSecond / bytesPerSecond; }
  /// Seconds to move `bytes` at the bandwidth, to do `flops` at the rate.
  double memorySeconds(double bytes) const { return bytes / bytesPerSecond; }
  double computeSeconds(double flops) const { return flops / flopsPerSecond; }
  /// The roofline: whichever of the two takes longer.
  double roofline(double bytes, double flops) const {
    return std::max(memorySeconds(bytes), computeSeconds(flops));
  }
};

/// "h100", "h200" or "NAME:BW_TBps:TFLOPs[:FIXED_us]"; throws kfuse::Error naming the accepted forms.
Device parseDevice(std::string_view spec);
std::vector<Device> builtinDevices();

} // namespace kfuse
