#include "runtime/Autotune.h"

#include "ir/Error.h"
#include "ir/InputFile.h"
#include "runtime/DeviceTensor.h"
#include "runtime/Executable.h"
#include "compiler/KernelCache.h"
#include "runtime/Timing.h"

#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <random>
#include <unistd.h>

namespace kfuse::runtime {

using namespace codegen;

static const char *kMagic = "kfuse-autotune-v1";

std::string autotuneCachePath(const std::string &key, const std::string &deviceName) {
  return fmt::format("{}/autotune-{}.txt", compiler::cacheDirectory(), compiler::hashHex(key + "\n" + deviceName));
}

/// A cached choice: magic, key, device, config, why; anything else is no entry.
static bool readChoice(const std::string &path, const std::string &key, const std::string &dev,
                       GemmTuning::Choice &c) {
  if (!InputFile(path).ok()) // a FIFO or a symlink loop in its place is no entry, not a hang
    return false;
  std::ifstream in(path);
  std::string magic, k, d;
  if (!std::getline(in, magic) || !std::getline(in, k) || !std::getline(in, d) ||
      !std::getline(in, c.config) || !std::getline(in, c.why))
    return false;
  return magic == kMagic && k == key && d == dev && !c.config.empty();
}

static void writeChoice(const std::string &path, const std::string &key, const std::string &dev,
                        const GemmTuning::Choice &c) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::string tmp = fmt::format("{}.tmp{}", path, ::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out)
      return; // an unwritable cache only costs measuring again next time
    out << kMagic << '\n' << key << '\n' << dev << '\n' << c.config << '\n' << c.why << '\n';
    if (!out)
      return;
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec)
    std::filesystem::remove(tmp, ec);
}

/// A device buffer of `t`'s storage filled with random values of magnitude [0.5, 1).
static DeviceBuffer randomBuffer(Driver &d, const TensorType &t, std::mt19937 &rng) {
  size_t n = static_cast<size_t>(numElements(t.shape));
  DeviceBuffer b(static_cast<size_t>(t.bytes()));
  if (n == 0)
    return b;
  std::vector<uint32_t> raw((t.bytes() + 3) / 4);
  if (t.dtype == DType::F32) {
    std::uniform_real_distribution<float> u(0.5f, 1.0f);
    for (uint32_t &w : raw) {
      float f = (rng() & 1) ? -u(rng) : u(rng);
      std::memcpy(&w, &f, 4);
    }
  } else { // two 16-bit values per word: sign, the exponent of [0.5, 1), random mantissa
    uint32_t expo = t.dtype == DType::BF16 ? 126u << 7 : 14u << 10;
    uint32_t mant = t.dtype == DType::BF16 ? 0x7fu : 0x3ffu;
    for (uint32_t &w : raw) {
      uint32_t r = rng();
      uint32_t lo = (r & 0x8000u) | expo | (r & mant), hi = ((r >> 16) & 0x8000u) | expo | ((r >> 16) & mant);
      w = lo | hi << 16;
    }
  }
  d.check(d.cuMemcpyHtoD_v2(b.ptr(), raw.data(), static_cast<size_t>(t.bytes())),
          "copying autotune inputs to the device");
  return b;
}

/// Measures the candidates of kernel `k`'s problem; fills `r` and returns the choice.
static GemmTuning::Choice measure(Driver &d, const KernelSpec &k, const Target &t,
                                  const AutotuneOptions &o, AutotuneResult &r) {
  std::vector<GemmSpec> cands = gemmCandidates(*k.gemm(), t);
  std::vector<KernelSpec> specs;
  for (size_t i = 0; i < cands.size(); ++i) {
    KernelSpec c = k;
    c.kind = cands[i];
    c.index = static_cast<unsigned>(i);
    c.mangled = fmt::format("{}_cand{}", k.mangled, i);
    specs.push_back(std::move(c));
  }
  std::vector<unsigned> in, out;
  std::vector<DeviceBuffer> bufs;
  std::vector<CUdeviceptr> inPtr, outPtr;
  std::mt19937 rng(1234);
  for (const SpecTensor &x : k.inputs) {
    in.push_back(x.nodeId);
    bufs.push_back(randomBuffer(d, x.type, rng));
    inPtr.push_back(bufs.back().ptr());
  }
  for (const SpecOutput &x : k.outputs) {
    out.push_back(x.tensor.nodeId);
    bufs.emplace_back(static_cast<size_t>(x.tensor.type.bytes()));
    outPtr.push_back(bufs.back().ptr());
  }
  compiler::CompileOptions co;
  co.target = t;
  Executable exe(d, compiler::compileKernels(std::move(specs), in, out, co));
  exe.bind(inPtr, outPtr);
  CUstream stream = nullptr;
  d.check(d.cuStreamCreate(&stream, 0), "cuStreamCreate");
  // A candidate whose launch is refused (say, a cluster the device cannot place) is
  // recorded as failed and skipped; the heuristic's choice stays when every one fails.
  size_t best = 0;
  for (size_t i = 0; i < cands.size(); ++i) {
    double us = -1;
    try {
      us = 1e3 * medianMs(stream, [&] { exe.launchKernel(static_cast<unsigned>(i), stream); },
                          {3, o.reps});
    } catch (const Error &) {
      d.cuStreamSynchronize(stream);
    }
    r.tried.push_back({cands[i].describe(), us});
    if (us >= 0 && (r.tried[best].us < 0 || us < r.tried[best].us))
      best = i;
  }
  d.cuStreamDestroy_v2(stream);
  r.chosen = best;
  GemmTuning::Choice c;
  c.config = cands[best].describe();
  c.why = fmt::format("autotuned on {}: {:.1f} us, the fastest of {} configurations (the "
                      "heuristic's {}: {:.1f} us)",
                      d.deviceName, r.tried[best].us, cands.size(), r.tried[0].config,
                      r.tried[0].us);
  return c;
}

GemmTuning autotuneGemms(Driver &d, const std::vector<KernelSpec> &kernels, const Target &t,
                         std::vector<AutotuneResult> *results, const AutotuneOptions &o) {
  GemmTuning tuning;
  for (const KernelSpec &k : kernels) {
    if (!k.gemm() || k.numel() == 0)
      continue;
    std::string key = gemmProblemKey(*k.gemm(), t);
    if (tuning.byProblem.count(key) || gemmCandidates(*k.gemm(), t).size() < 2)
      continue;
    AutotuneResult r;
    r.kernel = k.name;
    r.key = key;
    std::string path = autotuneCachePath(key, d.deviceName);
    GemmTuning::Choice c;
    if (o.useCache && readChoice(path, key, d.deviceName, c)) {
      r.fromCache = true;
      r.tried.push_back({c.config, -1});
    } else {
      c = measure(d, k, t, o, r);
      writeChoice(path, key, d.deviceName, c);
    }
    tuning.byProblem[key] = c;
    if (results)
      results->push_back(std::move(r));
  }
  return tuning;
}

} // namespace kfuse::runtime
