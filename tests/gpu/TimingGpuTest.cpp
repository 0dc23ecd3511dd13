// runtime/Timing on the GPU: a queued repetition waits behind the busy kernel, which runs
// before the start event (so its time is never counted), and the busy kernel really runs
// for the time asked (the wall time of the repetitions covers it).
#include "GpuHarness.h"

#include "runtime/DeviceTensor.h"
#include "runtime/Timing.h"

#include <catch2/catch.hpp>
#include <chrono>

using namespace kfuse;
using namespace kfuse::runtime;

TEST_CASE("timing: queued repetitions exclude the busy kernel ahead of them", "[gpu][timing]") {
  Driver &d = Driver::require();
  DeviceBuffer src(1 << 20), dst(1 << 20);
  auto copy = [&] {
    d.check(d.cuMemcpyDtoDAsync_v2(dst.ptr(), src.ptr(), 1 << 20, nullptr), "cuMemcpyDtoDAsync");
  };
  TimingOptions o;
  o.warmup = 2;
  o.reps = 10;
  o.queueBehindUs = 2000; // far longer than a 1 MiB copy (~1 us) and its submission
  const auto t0 = std::chrono::steady_clock::now();
  const double queued = medianMs(nullptr, copy, o);
  const double wallMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  INFO("queued 1 MiB copy " << queued << " ms, " << o.reps << " repetitions in " << wallMs
                            << " ms of wall time");
  CHECK(queued > 0);
  CHECK(queued < 0.2);                    // the 2 ms busy kernel is not inside the events
  CHECK(wallMs > 0.9 * 2.0 * o.reps);     // it ran before each repetition (not the warm-up)
  o.queueBehindUs = 0;
  const double perCall = medianMs(nullptr, copy, o);
  INFO("per call " << perCall << " ms");
  CHECK(perCall < 0.2);
}
