#include "runtime/Timing.h"

#include "runtime/DeviceTensor.h"
#include "compiler/Nvrtc.h"

#include <algorithm>
#include <vector>

namespace kfuse::runtime {

namespace {
/// Two events, destroyed on every path out (a failed check throws).
struct EventPair {
  Driver &d;
  CUevent start = nullptr, stop = nullptr;
  explicit EventPair(Driver &drv) : d(drv) {
    d.check(d.cuEventCreate(&start, 0), "cuEventCreate");
    d.check(d.cuEventCreate(&stop, 0), "cuEventCreate");
  }
  ~EventPair() {
    d.cuEventDestroy_v2(start);
    d.cuEventDestroy_v2(stop);
  }
};

/// One thread spinning on the GPU's global timer (nanoseconds) for `ns`.
const char *kBusySource = R"(extern "C" __global__ void kf_busy(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}
)";

/// Enqueues the busy kernel on `stream` for `us` microseconds (compiled and loaded once).
void keepBusy(Driver &d, CUstream stream, double us) {
  static CUfunction fn = [&d] {
    compiler::CompiledProgram p = compiler::nvrtcCompile(kBusySource, d.arch(), false);
    CUmodule m;
    d.check(d.cuModuleLoadData(&m, p.cubin.data()), "loading the timing's busy kernel");
    CUfunction f;
    d.check(d.cuModuleGetFunction(&f, m, "kf_busy"), "cuModuleGetFunction kf_busy");
    return f;
  }();
  unsigned long long ns = static_cast<unsigned long long>(us * 1e3);
  void *args[] = {&ns};
  d.check(d.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, args, nullptr),
          "launching the timing's busy kernel");
}
} // namespace

double medianMs(CUstream stream, const std::function<void()> &work, const TimingOptions &o) {
  Driver &d = Driver::require();
  EventPair ev(d);
  for (int i = 0; i < o.warmup; ++i)
    work();
  d.check(d.cuStreamSynchronize(stream), "synchronizing after the warm-up runs");
  std::vector<float> t;
  for (int i = 0; i < std::max(1, o.reps); ++i) {
    if (o.queueBehindUs > 0)
      keepBusy(d, stream, o.queueBehindUs);
    d.check(d.cuEventRecord(ev.start, stream), "cuEventRecord");
    work();
    d.check(d.cuEventRecord(ev.stop, stream), "cuEventRecord");
    d.check(d.cuEventSynchronize(ev.stop), "waiting for the timed work");
    float ms = 0;
    d.check(d.cuEventElapsedTime_v2(&ms, ev.start, ev.stop), "cuEventElapsedTime");
    t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

double copyMs(size_t bytes, const TimingOptions &o) {
  Driver &d = Driver::require();
  DeviceBuffer src(bytes), dst(bytes);
  d.check(d.cuMemsetD8_v2(src.ptr(), 0x3C, bytes), "cuMemsetD8");
  return medianMs(
      nullptr,
      [&] {
        d.check(d.cuMemcpyDtoDAsync_v2(dst.ptr(), src.ptr(), bytes, nullptr), "cuMemcpyDtoDAsync");
      },
      o);
}

} // namespace kfuse::runtime
