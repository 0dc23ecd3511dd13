#include "compiler/Nvrtc.h"

#include "ir/Error.h"
#include "compiler/KernelCache.h"

#include <fstream>
#include <nvrtc.h>
#include <optional>

namespace kfuse::compiler {

std::string nvrtcVersionString() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return fmt::format("{}.{}", major, minor);
}

std::vector<int> nvrtcSupportedArchs() {
  int n = 0;
  if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0)
    return {};
  std::vector<int> archs(static_cast<size_t>(n));
  if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS)
    return {};
  return archs;
}

std::vector<std::string> nvrtcOptions(const std::string &arch, CompileEffort effort) {
  // ptxas -v: each kernel's registers, spills and shared memory in the log, for the dumps.
  std::vector<std::string> o{"--gpu-architecture=" + arch, "--std=c++17", "-default-device",
                             "--ptxas-options=-v"};
  if (effort == CompileEffort::CheckOnly)
    o.push_back("--Ofast-compile=max");
  return o;
}

static void checkNvrtc(nvrtcResult r, const char *what) {
  if (r != NVRTC_SUCCESS)
    fail("NVRTC {} failed: {}", what, nvrtcGetErrorString(r));
}

CompiledProgram nvrtcCompile(const std::string &source, const std::string &arch, bool wantPtx,
                             CompileEffort effort) {
  nvrtcProgram prog;
  checkNvrtc(nvrtcCreateProgram(&prog, source.c_str(), "kfuse.cu", 0, nullptr, nullptr), "create");
  std::vector<std::string> opts = nvrtcOptions(arch, effort);
  std::vector<const char *> copts;
  for (const std::string &o : opts)
    copts.push_back(o.c_str());
  nvrtcResult r = nvrtcCompileProgram(prog, static_cast<int>(copts.size()), copts.data());
  CompiledProgram out;
  size_t logSize = 0;
  nvrtcGetProgramLogSize(prog, &logSize);
  out.log.resize(logSize);
  if (logSize)
    nvrtcGetProgramLog(prog, out.log.data());
  while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n'))
    out.log.pop_back();
  if (r != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&prog);
    // Name the source file only when it was written: an unusable cache has none to show.
    std::string path = "not saved (no usable kernel cache)";
    if (std::optional<std::string> dir = usableCacheDirectory()) {
      std::string file = *dir + "/failed-" + hashHex(source) + ".cu";
      std::ofstream out(file);
      out << source;
      out.close();
      path = out ? file : "not saved: cannot write '" + file + "'";
    }
    std::string joined;
    for (const std::string &o : opts)
      joined += (joined.empty() ? "" : " ") + o;
    fail("NVRTC could not compile the generated kernels ({}); options: {}; source: {}; log:\n{}",
         nvrtcGetErrorString(r), joined, path, out.log);
  }
  size_t n = 0;
  checkNvrtc(nvrtcGetCUBINSize(prog, &n), "getting the cubin size");
  out.cubin.resize(n);
  checkNvrtc(nvrtcGetCUBIN(prog, out.cubin.data()), "getting the cubin");
  if (wantPtx) {
    checkNvrtc(nvrtcGetPTXSize(prog, &n), "getting the PTX size");
    out.ptx.resize(n);
    checkNvrtc(nvrtcGetPTX(prog, out.ptx.data()), "getting the PTX");
    while (!out.ptx.empty() && out.ptx.back() == '\0')
      out.ptx.pop_back();
  }
  nvrtcDestroyProgram(&prog);
  return out;
}

} // namespace kfuse::compiler
