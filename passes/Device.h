#pragma once
/// The devices the traffic model predicts for: peak memory bandwidth and peak FLOP rate.
/// Built in: h100 (3.35 TB/s, 1979 TFLOP/s: the seed's numbers, ridge 591 FLOP/byte) and
/// h200 (4.19 TB/s measured copy bandwidth, 790 TFLOP/s dense bf16). Any other device is
/// written `NAME:BW_TBps:TFLOPs`, e.g. `a100:2.0:312`.
#include <string>
#include <string_view>
#include <vector>

namespace kfuse {

struct Device {
  std::string name;
  double bytesPerSecond = 0; ///< peak memory bandwidth
  double flopsPerSecond = 0; ///< peak FLOP rate
  /// FLOP per byte above which a kernel is compute-bound.
  double ridge() const { return flopsPerSecond / bytesPerSecond; }
};

/// "h100", "h200" or "NAME:BW_TBps:TFLOPs"; throws kfuse::Error naming the accepted forms.
Device parseDevice(std::string_view spec);
std::vector<Device> builtinDevices();

} // namespace kfuse
