#include "runtime/Benchmark.h"

#include "analysis/KernelEstimate.h"
#include "analysis/Traffic.h"

#include <algorithm>
#include <fmt/format.h>

namespace kfuse::runtime {

ProgramTiming benchmark(Executable &exe, llvm::ArrayRef<CUdeviceptr> inputs,
                        llvm::ArrayRef<CUdeviceptr> outputs, const Target &predictOn,
                        const TimingOptions &o) {
  Driver &d = Driver::require();
  ProgramTiming t;
  exe.bind(inputs, outputs);
  int64_t largest = 0;
  // The rates predictions are for, with the SMs the kernels fill (this GPU's).
  const Target target = deviceTarget(d, predictOn);
  for (unsigned k = 0; k < exe.specs().size(); ++k) {
    const codegen::KernelSpec &s = exe.specs()[k];
    KernelTiming kt;
    kt.name = s.name;
    kt.bytes = s.bytesMoved();
    kt.flops = s.flops();
    kt.predictedMs = 1e3 * estimateKernel(s, target).seconds;
    kt.ms = medianMs(
        nullptr, [&] { exe.launchKernel(k, nullptr); }, o);
    t.bytes += kt.bytes;
    t.predictedMs += kt.predictedMs;
    largest = std::max(largest, kt.bytes);
    t.kernels.push_back(std::move(kt));
  }
  // The kernels' estimates alone, as one CUDA graph: each after the first pays the graph's
  // cost per further kernel, not a kernel's alone.
  t.predictedMs = 1e3 * target.graphSeconds(t.predictedMs * 1e-3, t.kernels.size());
  t.streamMs = medianMs(
      nullptr, [&] { exe.launch(inputs, outputs, nullptr); }, o);
  if (exe.canCaptureGraph()) {
    exe.captureGraph(inputs, outputs);
    t.graphMs = medianMs(
        nullptr, [&] { exe.replay(nullptr); }, o);
  }
  // The roof: a copy of half the largest kernel's bytes moves as many bytes as it does.
  size_t half = static_cast<size_t>(std::max<int64_t>(largest / 2, 1 << 20));
  t.copyBytes = 2 * static_cast<int64_t>(half);
  t.copyMs = copyMs(half, o);
  d.check(d.cuCtxSynchronize(), "finishing the benchmark");
  return t;
}

std::string formatTiming(const ProgramTiming &t, const Target &predictOn) {
  std::string s =
      fmt::format("{:<28} {:>10} {:>10} {:>10} {:>8} {:>12}\n", "kernel", "time", "bytes", "GB/s",
                  "of copy", fmt::format("predicted@{}", predictOn.name));
  for (const KernelTiming &k : t.kernels)
    s += fmt::format("{:<28} {:>10} {:>10} {:>10.0f} {:>7.1f}% {:>12}\n", k.name,
                     formatSeconds(k.ms * 1e-3), formatBytes(double(k.bytes)),
                     k.bytesPerSecond() / 1e9, 100 * t.ofCopy(k.bytesPerSecond()),
                     formatSeconds(k.predictedMs * 1e-3));
  double streamRate = t.streamMs > 0 ? double(t.bytes) / (t.streamMs * 1e-3) : 0;
  s += fmt::format("{:<28} {:>10} {:>10} {:>10.0f} {:>7.1f}% {:>12}\n", "program (stream launches)",
                   formatSeconds(t.streamMs * 1e-3), formatBytes(double(t.bytes)), streamRate / 1e9,
                   100 * t.ofCopy(streamRate), formatSeconds(t.predictedMs * 1e-3));
  if (t.graphMs >= 0) {
    double graphRate = t.graphMs > 0 ? double(t.bytes) / (t.graphMs * 1e-3) : 0;
    s +=
        fmt::format("{:<28} {:>10} {:>10} {:>10.0f} {:>7.1f}% {:>12}\n", "program (one CUDA graph)",
                    formatSeconds(t.graphMs * 1e-3), formatBytes(double(t.bytes)), graphRate / 1e9,
                    100 * t.ofCopy(graphRate), formatSeconds(t.predictedMs * 1e-3));
  } else {
    s += "program (one CUDA graph)     not captured: an output is an input or repeated\n";
  }
  s += fmt::format("{:<28} {:>10} {:>10} {:>10.0f} {:>7.1f}%\n", "device copy (roof)",
                   formatSeconds(t.copyMs * 1e-3), formatBytes(double(t.copyBytes)),
                   t.copyBytesPerSecond() / 1e9, 100.0);
  return s;
}

} // namespace kfuse::runtime
