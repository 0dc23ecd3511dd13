// GPU faults that must give one clear kfuse::Error and leave the process (and its CUDA
// context) usable: an allocation far beyond the device's memory (an Executable's arena and a
// plain buffer), and kernel launches the driver refuses (too many threads per block, too much
// shared memory). Both are non-sticky errors, so a later small graph must run right.
// Quick mode (KFUSE_GPU_QUICK, GpuHarness.h): 3 repeated failures, not 20, and a 1 MiB
// buffer after them, not 1 GiB.
#include "GpuHarness.h"

#include "ir/Builder.h"
#include "ir/Error.h"
#include "compiler/Nvrtc.h"

#include <catch2/catch.hpp>
#include <cstring>

using namespace kfuse;
using namespace kfuse::gputest;
using runtime::Driver;

namespace {

/// A small graph that must still run right after a fault.
std::string smallGraphRuns() {
  Graph g("after_fault");
  Value x = g.input("x", DType::F32, {1000});
  Value y = g.input("y", DType::F32, {1000});
  g.output(tanh(x * 2.0) + y);
  return runAndCheck(g, 5, false);
}

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("GPU fault: out of memory is a clear error and the process stays usable",
          "[gpu][fault]") {
  Driver &d = Driver::require();
  REQUIRE(smallGraphRuns() == "");
  // Unfused exp -> neg: the exp result lives in the arena, 2^37 f32 = 512 GiB.
  Graph g("oom");
  Value x = g.input("x", DType::F32, {int64_t(1) << 37});
  g.output(neg(exp(x)));
  std::string msg = errorOf([&] { runtime::Executable exe(d, runtime::compileAsGiven(d, g)); });
  INFO(msg);
  CHECK(msg.find("allocating the intermediate arena") != std::string::npos);
  CHECK(msg.find("CUDA_ERROR_OUT_OF_MEMORY") != std::string::npos);
  // A buffer of 4 TiB.
  msg = errorOf([&] { DeviceBuffer b(size_t(1) << 42); });
  INFO(msg);
  CHECK(msg.find("allocating 4398046511104 bytes on the device") != std::string::npos);
  CHECK(msg.find("failed: CUDA_ERROR_OUT_OF_MEMORY") != std::string::npos);
  CHECK(d.cuCtxSynchronize() == CUDA_SUCCESS);
  CHECK(smallGraphRuns() == "");
  // Many times over: nothing leaks into later allocations.
  for (int64_t i = 0, n = scaled(20, 3); i < n; ++i)
    CHECK_THROWS_AS(DeviceBuffer(size_t(1) << 42), Error);
  DeviceBuffer ok(static_cast<size_t>(scaled(int64_t(1) << 30, int64_t(1) << 20)));
  CHECK(ok.ptr() != 0);
  CHECK(smallGraphRuns() == "");
}

TEST_CASE("GPU fault: a refused kernel launch is a clear error and the context survives",
          "[gpu][fault]") {
  Driver &d = Driver::require();
  const char *src = "extern \"C\" __global__ void twice(float *p, int n) {\n"
                    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "  if (i < n) p[i] *= 2.0f;\n"
                    "}\n";
  compiler::CompiledProgram prog = compiler::nvrtcCompile(src, d.arch(), false);
  CUmodule mod = nullptr;
  d.check(d.cuModuleLoadData(&mod, prog.cubin.data()), "cuModuleLoadData");
  CUfunction f = nullptr;
  d.check(d.cuModuleGetFunction(&f, mod, "twice"), "cuModuleGetFunction");
  TensorType t{DType::F32, {256}};
  HostTensor host(256);
  for (int i = 0; i < 256; ++i)
    host[i] = i;
  DeviceBuffer buf = upload(t, host);
  int n = 256;
  CUdeviceptr p = buf.ptr();
  void *args[] = {&p, &n};
  // 4096 threads per block (the limit is 1024), then 1 GiB of dynamic shared memory.
  std::string tooMany = errorOf([&] {
    d.check(d.cuLaunchKernel(f, 1, 1, 1, 4096, 1, 1, 0, nullptr, args, nullptr), "cuLaunchKernel");
  });
  std::string tooMuchShared = errorOf([&] {
    d.check(d.cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 1u << 30, nullptr, args, nullptr),
            "cuLaunchKernel");
  });
  INFO(tooMany << "\n" << tooMuchShared);
  CHECK(tooMany.find("cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE") != std::string::npos);
  CHECK(tooMuchShared.find("cuLaunchKernel failed: CUDA_ERROR_") != std::string::npos);
  // The refused launches did nothing; a good one on the same context works.
  CHECK(d.cuCtxSynchronize() == CUDA_SUCCESS);
  CHECK(download(t, buf) == host);
  d.check(d.cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr), "cuLaunchKernel");
  d.check(d.cuCtxSynchronize(), "sync");
  HostTensor got = download(t, buf);
  for (int i = 0; i < 256; ++i)
    CHECK(got[i] == 2.0 * i);
  d.cuModuleUnload(mod);
  CHECK(smallGraphRuns() == "");
}
