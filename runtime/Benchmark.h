#pragma once
/// Benchmarking an Executable on its bound buffers: each kernel launched alone, the whole
/// program as stream launches and as one CUDA graph replay, and the roof measured in the
/// same run (a device copy moving as many bytes as the largest kernel). Per kernel the
/// bytes it moves, its rate, its share of the copy bandwidth and the time predicted for
/// it on a Target (analysis/KernelEstimate.h: the roofline, the GEMM tiles' quantization on
/// this GPU's SMs, the device's fixed cost per kernel).
#include "target/Target.h"
#include "runtime/Executable.h"
#include "runtime/Timing.h"

#include <string>
#include <vector>

namespace kfuse::runtime {

struct KernelTiming {
  std::string name;
  double ms = 0;     ///< median, launched alone
  int64_t bytes = 0; ///< moved: inputs read once, outputs written once
  double flops = 0;
  double predictedMs = 0; ///< on the Target given to benchmark()
  double bytesPerSecond() const { return ms > 0 ? double(bytes) / (ms * 1e-3) : 0.0; }
};

struct ProgramTiming {
  std::vector<KernelTiming> kernels;
  double streamMs = 0; ///< every kernel launched in order on a stream
  double graphMs = -1; ///< one CUDA graph replay; -1 when the program cannot be captured
  double predictedMs = 0;
  int64_t bytes = 0;
  int64_t copyBytes = 0; ///< bytes the roof copy moves (2 * its size)
  double copyMs = 0;
  double copyBytesPerSecond() const {
    return copyMs > 0 ? double(copyBytes) / (copyMs * 1e-3) : 0.0;
  }
  /// The share of the copy bandwidth a rate reaches.
  double ofCopy(double bytesPerSecond) const {
    return copyBytesPerSecond() > 0 ? bytesPerSecond / copyBytesPerSecond() : 0.0;
  }
};

/// Times `exe` on these buffers (it binds them; the CUDA graph is captured if possible).
ProgramTiming benchmark(Executable &exe, llvm::ArrayRef<CUdeviceptr> inputs,
                        llvm::ArrayRef<CUdeviceptr> outputs, const Target &predictOn,
                        const TimingOptions &o = {});

/// The table `kfuse run --bench` prints: a line per kernel, the whole program, the roof.
std::string formatTiming(const ProgramTiming &t, const Target &predictOn);

} // namespace kfuse::runtime
