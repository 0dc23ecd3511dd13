// GPU test binary: exits 77 (ctest's SKIP_RETURN_CODE) when no CUDA driver or device exists.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstdio>
#include <dlfcn.h>

int main(int argc, char **argv) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::fprintf(stderr, "kfuse_gpu_tests: no CUDA driver (libcuda.so.1) found: skipped\n");
    return 77;
  }
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int *);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(lib, "cuDeviceGetCount"));
  int n = 0;
  if (!init || !count || init(0) != 0 || count(&n) != 0 || n == 0) {
    std::fprintf(stderr, "kfuse_gpu_tests: no CUDA device found: skipped\n");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
