// GPU test binary: exits 77 (ctest's SKIP_RETURN_CODE) when no CUDA driver or device exists.
#define CATCH_CONFIG_RUNNER
#include "GpuHarness.h"
#include "runtime/Driver.h"

#include <catch2/catch.hpp>
#include <cstdio>

int main(int argc, char **argv) {
  kfuse::runtime::Driver *d = kfuse::runtime::Driver::get();
  if (!d) {
    std::fprintf(stderr, "kfuse_gpu_tests: %s: skipped\n",
                 kfuse::runtime::Driver::unavailableReason().c_str());
    return 77;
  }
  std::fprintf(stderr, "kfuse_gpu_tests: %s (%s, %d SMs)\n", d->deviceName.c_str(),
               d->arch().c_str(), d->smCount);
  if (kfuse::gputest::quickMode())
    std::fprintf(stderr, "kfuse_gpu_tests: KFUSE_GPU_QUICK: quick mode (fewer random graphs, "
                         "smaller tensors, the 2^31 + 7 element case skipped)\n");
  return Catch::Session().run(argc, argv);
}
