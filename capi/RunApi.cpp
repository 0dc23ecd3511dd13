// The C API's runs (include/kfuse/kfuse.h): the reference interpreter on host buffers, and
// runtime::Executable on the caller's device pointers and stream. The CUDA driver is the
// runtime's (dlopen'ed, runtime/Driver.h): without one every GPU call is
// KFUSE_ERROR_NO_DEVICE, and nothing here links it.
#include "capi/Api.h"

#include "ir/Interpreter.h"
#include "runtime/DeviceTensor.h"
#include "runtime/Driver.h"
#include "runtime/Executable.h"

#include <cstring>

using namespace kfuse;
using capi::failWith;
using capi::guard;
using capi::need;

kfuse_executable_s::~kfuse_executable_s() {
  if (runtime::Driver *d = runtime::Driver::get())
    d->cuCtxSetCurrent(d->context); // the modules and arena are freed in its context
}

namespace {

/// The driver with device 0's primary context current on this thread (the caller's thread
/// may not be the one that opened it), or KFUSE_ERROR_NO_DEVICE.
runtime::Driver &driverArg() {
  runtime::Driver *d = runtime::Driver::get();
  if (!d)
    failWith(KFUSE_ERROR_NO_DEVICE, "{}", runtime::Driver::unavailableReason());
  d->check(d->cuCtxSetCurrent(d->context), "making device 0's primary context current");
  return *d;
}

/// Buffer pointers checked against the count the graph wants.
void checkBuffers(const void *const *buffers, size_t n, size_t want, const char *what,
                  bool host) {
  if (n != want)
    failWith(KFUSE_ERROR_INVALID_ARGUMENT, "the graph has {} {}{}, got {}", want, what,
             want == 1 ? "" : "s", n);
  if (n && !buffers)
    failWith(KFUSE_ERROR_INVALID_ARGUMENT, "the {}s array is NULL", what);
  for (size_t i = 0; host && i < n; ++i)
    if (!buffers[i])
      failWith(KFUSE_ERROR_INVALID_ARGUMENT, "{} {} is NULL", what, i);
}

std::vector<CUdeviceptr> devicePointers(const void *const *buffers, size_t n) {
  std::vector<CUdeviceptr> out(n);
  for (size_t i = 0; i < n; ++i)
    out[i] = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(buffers[i]));
  return out;
}

kfuse_executable_s &executableArg(kfuse_executable e) { return *need(e, "executable"); }

} // namespace

extern "C" {

kfuse_status kfuse_run_cpu(kfuse_graph g, const void *const *inputs, size_t n_inputs,
                           void *const *outputs, size_t n_outputs) {
  return guard("kfuse_run_cpu", KFUSE_ERROR_RUN, [&] {
    const Graph &G = *capi::graphArg(g).graph;
    checkBuffers(inputs, n_inputs, G.inputs().size(), "input", true);
    checkBuffers(const_cast<const void *const *>(outputs), n_outputs, G.outputs().size(),
                 "output", true);
    std::vector<Tensor> in;
    for (size_t i = 0; i < n_inputs; ++i)
      in.push_back(runtime::decodeTensor(G.inputs()[i]->type(),
                                         static_cast<const unsigned char *>(inputs[i])));
    std::vector<Tensor> out = interpret(G, in);
    for (size_t i = 0; i < out.size(); ++i) {
      std::vector<unsigned char> raw = runtime::encodeTensor(out[i]);
      if (!raw.empty())
        std::memcpy(outputs[i], raw.data(), raw.size());
    }
  });
}

kfuse_status kfuse_encode(kfuse_dtype dtype, const float *src, size_t n, void *dst) {
  return guard("kfuse_encode", KFUSE_ERROR_INTERNAL, [&] {
    DType t = capi::dtypeArg(dtype);
    if (!n)
      return;
    need(src, "src");
    need(dst, "dst");
    Tensor tensor(TensorType{t, Shape{static_cast<int64_t>(n)}},
                  std::vector<double>(src, src + n));
    std::vector<unsigned char> raw = runtime::encodeTensor(tensor);
    std::memcpy(dst, raw.data(), raw.size());
  });
}

kfuse_status kfuse_decode(kfuse_dtype dtype, const void *src, size_t n, float *dst) {
  return guard("kfuse_decode", KFUSE_ERROR_INTERNAL, [&] {
    DType t = capi::dtypeArg(dtype);
    if (!n)
      return;
    need(src, "src");
    need(dst, "dst");
    Tensor tensor = runtime::decodeTensor(TensorType{t, Shape{static_cast<int64_t>(n)}},
                                          static_cast<const unsigned char *>(src));
    for (size_t i = 0; i < n; ++i)
      dst[i] = static_cast<float>(tensor.data[i]);
  });
}

kfuse_status kfuse_dtype_size(kfuse_dtype dtype, size_t *bytes) {
  return guard("kfuse_dtype_size", KFUSE_ERROR_INTERNAL, [&] {
    DType t = capi::dtypeArg(dtype);
    *need(bytes, "bytes") = dtypeSize(t);
  });
}

kfuse_status kfuse_device_get(const char **name, int *cc_major, int *cc_minor, int *sm_count) {
  return guard("kfuse_device_get", KFUSE_ERROR_DEVICE, [&] {
    runtime::Driver &d = driverArg();
    if (name)
      *name = d.deviceName.c_str();
    if (cc_major)
      *cc_major = d.ccMajor;
    if (cc_minor)
      *cc_minor = d.ccMinor;
    if (sm_count)
      *sm_count = d.smCount;
  });
}

kfuse_status kfuse_executable_create(kfuse_module m, kfuse_executable *out) {
  return guard("kfuse_executable_create", KFUSE_ERROR_DEVICE, [&] {
    kfuse_module_s &M = capi::moduleArg(m);
    need(out, "out");
    runtime::Driver &d = driverArg();
    if (M.stage != compiler::Stage::Cubin)
      failWith(KFUSE_ERROR_INVALID_ARGUMENT, "the module was compiled only to {}: compile it "
                                             "to KFUSE_STAGE_CUBIN",
               M.stage == compiler::Stage::Plan ? "its plan" : "CUDA C");
    int sm = d.ccMajor * 10 + d.ccMinor;
    unsigned built = M.module.target.sm;
    if (!M.module.kernels.empty() &&
        (static_cast<int>(built / 10) != d.ccMajor || static_cast<int>(built) > sm))
      failWith(KFUSE_ERROR_INVALID_ARGUMENT,
               "the module was compiled for {}, device 0 is {} ({}): compile it with arch "
               "\"device\"",
               M.module.arch, d.arch(), d.deviceName);
    auto e = std::make_unique<kfuse_executable_s>();
    e->exe = std::make_unique<runtime::Executable>(d, M.module);
    e->numInputs = M.module.inputIds.size();
    e->numOutputs = M.module.outputIds.size();
    *out = e.release();
  });
}

kfuse_status kfuse_executable_destroy(kfuse_executable e) {
  return guard("kfuse_executable_destroy", KFUSE_ERROR_DEVICE, [&] { delete e; });
}

kfuse_status kfuse_executable_launch(kfuse_executable e, const void *const *inputs,
                                     size_t n_inputs, void *const *outputs, size_t n_outputs,
                                     void *stream) {
  return guard("kfuse_executable_launch", KFUSE_ERROR_DEVICE, [&] {
    kfuse_executable_s &E = executableArg(e);
    checkBuffers(inputs, n_inputs, E.numInputs, "input", false);
    checkBuffers(const_cast<const void *const *>(outputs), n_outputs, E.numOutputs, "output",
                 false);
    driverArg();
    E.exe->launch(devicePointers(inputs, n_inputs),
                  devicePointers(const_cast<const void *const *>(outputs), n_outputs),
                  static_cast<CUstream>(stream));
  });
}

kfuse_status kfuse_executable_replay(kfuse_executable e, const void *const *inputs,
                                     size_t n_inputs, void *const *outputs, size_t n_outputs,
                                     void *stream) {
  return guard("kfuse_executable_replay", KFUSE_ERROR_DEVICE, [&] {
    kfuse_executable_s &E = executableArg(e);
    checkBuffers(inputs, n_inputs, E.numInputs, "input", false);
    checkBuffers(const_cast<const void *const *>(outputs), n_outputs, E.numOutputs, "output",
                 false);
    driverArg();
    std::vector<CUdeviceptr> in = devicePointers(inputs, n_inputs);
    std::vector<CUdeviceptr> out =
        devicePointers(const_cast<const void *const *>(outputs), n_outputs);
    if (!E.exe->canCaptureGraph()) {
      E.exe->launch(in, out, static_cast<CUstream>(stream));
      return;
    }
    if (!E.captured) {
      E.exe->captureGraph(in, out);
      E.captured = true;
    } else if (in != E.boundIn || out != E.boundOut) {
      E.exe->rebindGraph(in, out);
    }
    E.boundIn = in;
    E.boundOut = out;
    E.exe->replay(static_cast<CUstream>(stream));
  });
}

} // extern "C"
