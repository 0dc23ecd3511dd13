#include "runtime/Driver.h"

#include "ir/Error.h"

#include <dlfcn.h>
#include <memory>

namespace kfuse::runtime {

static std::string &reason() {
  static std::string r;
  return r;
}

/// Driver::clusterPairs, measured with an empty kernel of the same footprint (PTX, JIT-
/// compiled by the driver); 0 when any step fails.
static int measureClusterPairs(Driver &d) {
  static const char *kProbe = ".version 8.0\n.target sm_90\n.address_size 64\n"
                              ".visible .entry kf_cluster_probe() .reqnctapercluster 2, 1, 1\n"
                              "{\n  ret;\n}\n";
  CUmodule m = nullptr;
  if (d.cuModuleLoadData(&m, kProbe) != CUDA_SUCCESS)
    return 0;
  int fit = 0;
  CUfunction f = nullptr;
  CUlaunchConfig c{};
  c.gridDimX = static_cast<unsigned>(d.smCount - d.smCount % 2);
  c.gridDimY = c.gridDimZ = c.blockDimY = c.blockDimZ = 1;
  c.blockDimX = 384;
  c.sharedMemBytes = 200 * 1024;
  if (d.cuModuleGetFunction(&f, m, "kf_cluster_probe") != CUDA_SUCCESS ||
      d.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                           static_cast<int>(c.sharedMemBytes)) != CUDA_SUCCESS ||
      d.cuOccupancyMaxActiveClusters(&fit, f, &c) != CUDA_SUCCESS)
    fit = 0;
  d.cuModuleUnload(m);
  return fit;
}

static std::unique_ptr<Driver> load() {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    reason() = "no CUDA driver found (libcuda.so.1 could not be opened)";
    return nullptr;
  }
  auto d = std::make_unique<Driver>();
#define KF_CU_FN(name, ...)                                                                        \
  d->name = reinterpret_cast<decltype(d->name)>(dlsym(lib, #name));                                \
  if (!d->name) {                                                                                  \
    reason() = "the CUDA driver lacks " #name " (driver too old)";                                 \
    return nullptr;                                                                                \
  }
#include "runtime/DriverFunctions.def"
  int count = 0;
  if (d->cuInit(0) != CUDA_SUCCESS || d->cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
    reason() = "no CUDA device found";
    return nullptr;
  }
  if (d->cuDeviceGet(&d->device, 0) != CUDA_SUCCESS ||
      d->cuDevicePrimaryCtxRetain(&d->context, d->device) != CUDA_SUCCESS ||
      d->cuCtxSetCurrent(d->context) != CUDA_SUCCESS) {
    reason() = "the CUDA device could not be opened";
    return nullptr;
  }
  char name[256] = {};
  d->cuDeviceGetName(name, sizeof name, d->device);
  d->deviceName = name;
  d->cuDeviceGetAttribute(&d->ccMajor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d->device);
  d->cuDeviceGetAttribute(&d->ccMinor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d->device);
  d->cuDeviceGetAttribute(&d->smCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d->device);
  if (d->ccMajor >= 9)
    d->clusterPairs = measureClusterPairs(*d);
  return d;
}

Driver *Driver::get() {
  static std::unique_ptr<Driver> d = load();
  return d.get();
}

const std::string &Driver::unavailableReason() {
  get();
  return reason();
}

Driver &Driver::require() {
  Driver *d = get();
  if (!d)
    fail("this command needs a GPU: {}", reason());
  return *d;
}

void Driver::check(CUresult r, const char *what) const {
  if (r == CUDA_SUCCESS)
    return;
  const char *name = nullptr;
  if (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
    name = "unknown CUDA error";
  fail("{} failed: {} ({})", what, name, static_cast<int>(r));
}

} // namespace kfuse::runtime
