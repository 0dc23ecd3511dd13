// The device helpers in codegen/cuda/*.cuh: their headers agree with their code, each file
// compiles on its own (with what it requires), and programs carry exactly the helpers their
// kernels use (emitKernelSource compiles alone). The NVRTC compiles run two at a time, the
// kernel sources' to PTX only (compute_80, compute_90a: the GEMM tests already take every
// kernel variant through ptxas, slowly): about three seconds in all.
#include "codegen/DeviceCode.h"
#include "codegen/CudaCodegen.h"
#include "ir/Builder.h"
#include "passes/Fusion.h"
#include "compiler/Nvrtc.h"

#include <catch2/catch.hpp>
#include <future>
#include <map>
#include <set>

using namespace kfuse;
using namespace kfuse::codegen;

namespace {

/// Where each file applies: "80" where sm_80 programs may carry it, "90a" for sm_90a (every
/// file does). wgmma.cuh and gemm_wgmma.cuh are sm_90a's alone (wgmma, setmaxnreg); tma.cuh
/// is carried by the decode kernel on sm_80 too (its TMA and cluster paths never run there).
const std::map<std::string, std::vector<std::string>> kArchs = {
    {"convert.cuh", {"80", "90a"}},
    {"math_nan.cuh", {"80", "90a"}},
    {"math_minmax.cuh", {"80", "90a"}},
    {"prefetch.cuh", {"80", "90a"}},
    {"math_relu.cuh", {"80", "90a"}},
    {"math_sigmoid.cuh", {"80", "90a"}},
    {"math_silu.cuh", {"80", "90a"}},
    {"math_gelu.cuh", {"80", "90a"}},
    {"math_gelu_tanh.cuh", {"80", "90a"}},
    {"gemm_el.cuh", {"80", "90a"}},
    {"load16.cuh", {"80", "90a"}},
    {"smem_addr.cuh", {"80", "90a"}},
    {"cp_async.cuh", {"80", "90a"}},
    {"ldmatrix.cuh", {"80", "90a"}},
    {"mma_sync.cuh", {"80", "90a"}},
    {"tile_load.cuh", {"80", "90a"}},
    {"mma_tf32.cuh", {"80", "90a"}},
    {"gemm_tc.cuh", {"80", "90a"}},
    {"gemm_simt.cuh", {"80", "90a"}},
    {"gemv_nk.cuh", {"80", "90a"}},
    {"gemv_kn.cuh", {"80", "90a"}},
    {"tma.cuh", {"80", "90a"}},
    {"wgmma.cuh", {"90a"}},
    {"gemm_wgmma.cuh", {"90a"}},
    {"gemm_decode.cuh", {"80", "90a"}},
    {"row_reduce.cuh", {"80", "90a"}},
    {"group_sync.cuh", {"80", "90a"}},
    {"cluster_push.cuh", {"80", "90a"}},
    {"bulk_copy.cuh", {"80", "90a"}},
};

/// Compiles each (source, arch) with NVRTC, two at a time; the error (log included) of
/// every one that fails.
std::vector<std::string> compileAll(const std::vector<std::pair<std::string, std::string>> &jobs) {
  std::vector<std::string> errors;
  for (size_t i = 0; i < jobs.size(); i += 2) {
    std::vector<std::future<std::string>> running;
    for (size_t j = i; j < std::min(i + 2, jobs.size()); ++j)
      running.push_back(std::async(std::launch::async, [&job = jobs[j]] {
        try { // errors only: a file alone declares helpers nothing calls (NVRTC warns)
          compiler::nvrtcCompile(job.first, job.second, false);
          return std::string();
        } catch (const std::exception &e) {
          return std::string(e.what());
        }
      }));
    for (auto &r : running)
      if (std::string e = r.get(); !e.empty())
        errors.push_back(e);
  }
  return errors;
}

std::string closureSource(const DeviceFile &f) {
  std::string src;
  for (const DeviceFile *d : deviceClosure(f))
    src += d->body;
  return src;
}

} // namespace

TEST_CASE("device files: headers agree with the code, the list is in dependency order",
          "[codegen][device]") {
  const std::vector<DeviceFile> &files = deviceFiles();
  std::set<std::string> names, earlier;
  for (const DeviceFile &f : files) {
    INFO(f.name);
    names.insert(f.name);
    CHECK(kArchs.count(f.name) == 1); // every file is compiled below
    REQUIRE(!f.provides.empty());
    std::vector<std::string> used = deviceNamesUsed(f.body);
    for (const std::string &p : f.provides) // defined here, and by no other file
      CHECK(std::find(used.begin(), used.end(), p) != used.end());
    for (const std::string &n : f.needs) {
      CHECK(earlier.count(n) == 1); // emitted before it
      bool usedHere = false;        // and not carried for nothing
      for (const std::string &p : deviceFile(n).provides)
        usedHere |= std::find(used.begin(), used.end(), p) != used.end();
      CHECK(usedHere);
    }
    // Every kf_ name it uses is its own or a requirement's (the __shared__ arrays declared
    // inside its templates aside).
    std::set<std::string> known{"kf_smem", "kf_wg_smem"};
    for (const DeviceFile *d : deviceClosure(f))
      known.insert(d->provides.begin(), d->provides.end());
    for (const std::string &u : used)
      CHECK(known.count(u) == 1);
    earlier.insert(f.name);
  }
  CHECK(names.size() == kArchs.size());
  for (const DeviceFile &a : files) // a name has one home
    for (const DeviceFile &b : files)
      for (const std::string &p : a.provides)
        CHECK((&a == &b || std::find(b.provides.begin(), b.provides.end(), p) == b.provides.end()));
}

TEST_CASE("every device file compiles on its own, with what it requires", "[nvrtc][device]") {
  std::vector<std::pair<std::string, std::string>> jobs;
  for (const DeviceFile &f : deviceFiles())
    for (const std::string &arch : kArchs.at(f.name))
      jobs.push_back({closureSource(f), "sm_" + arch});
  for (const std::string &e : compileAll(jobs))
    FAIL_CHECK(e);
}

namespace {

std::unique_ptr<Graph> mulGraph() {
  auto g = std::make_unique<Graph>("mul");
  g->output(g->input("x", f32, {1000}) * g->input("y", f32, {1000}));
  return g;
}

std::unique_ptr<Graph> matmulGraph(DType t, int64_t m) {
  auto g = std::make_unique<Graph>("mm");
  Value a = g->input("a", t, {m, 256});
  Value b = g->input("b", t, {256, 512});
  g->output(gelu(matmul(a, b) + g->input("bias", t, {512})));
  fuseGraph(*g);
  return g;
}

} // namespace

TEST_CASE("a program carries only the helpers its kernels use", "[codegen][device]") {
  std::string mul = emitProgram(buildKernelSpecs(*mulGraph()));
  CHECK(mul.find("kf_gelu") == std::string::npos);
  CHECK(mul.find("kf_h2f") == std::string::npos); // f32: no conversions
  CHECK(mul.find("kf_gemm") == std::string::npos);
  CHECK(mul.find("kf_") == std::string::npos); // x * y calls no helper at all
  Graph g("act");
  Value x = g.input("x", bf16, {1000});
  g.output(silu(x));
  std::string act = emitProgram(buildKernelSpecs(g));
  CHECK(act.find("kf_silu(float x)") != std::string::npos);
  CHECK(act.find("kf_bf2f(unsigned short h)") != std::string::npos);
  CHECK(act.find("kf_gelu") == std::string::npos);
  CHECK(act.find("kf_sigmoid") == std::string::npos);
  // A Hopper GEMM carries its template and what it needs, not the mma.sync ones.
  std::string wg = emitProgram(buildKernelSpecs(*matmulGraph(bf16, 512), targetFor(90, 132)));
  CHECK(wg.find("kf_gemm_wg(") != std::string::npos);
  CHECK(wg.find("struct kf_wgmma<") != std::string::npos);
  CHECK(wg.find("kf_tma3(") != std::string::npos);
  CHECK(wg.find("kf_gemm_tc") == std::string::npos);
  CHECK(wg.find("kf_gemv") == std::string::npos);
  CHECK(wg.find("kf_silu") == std::string::npos);
}

TEST_CASE("emitKernelSource: one kernel with its helpers, compiling alone", "[nvrtc][device]") {
  Graph g("two"); // two kernels: each source holds its own helpers only
  Value x = g.input("x", f16, {4096});
  Value y = g.input("y", f32, {32, 64});
  g.output(gelu_tanh(x * 0.5));
  g.output(max(y, 0.0) + min(y, 1.0));
  fuseGraph(g);
  std::vector<KernelSpec> ew = buildKernelSpecs(g);
  REQUIRE(ew.size() == 2);
  std::string program = emitProgram(ew);
  std::vector<std::pair<std::string, std::string>> jobs;
  for (const KernelSpec &k : ew) {
    std::string src = emitKernelSource(k);
    CHECK(src == emitProgram({k}));
    // Its kernel code is the program's, byte for byte.
    size_t at = src.find("\nstatic __device__ __forceinline__ void " + k.mangled + "_elem");
    REQUIRE(at != std::string::npos);
    CHECK(program.find(src.substr(at)) != std::string::npos);
    jobs.push_back({src, "compute_80"});
  }
  CHECK(emitKernelSource(ew[0]).find("kf_max") == std::string::npos);
  CHECK(emitKernelSource(ew[1]).find("kf_gelu_tanh") == std::string::npos);
  CHECK(emitKernelSource(ew[1]).find("kf_h2f") == std::string::npos);
  // GEMMs: wgmma (sm_90a), mma.sync (sm_80), f32 FFMA tiles, the small-M decode kernel.
  auto gemm = [&](DType t, int64_t m, Target target, const std::string &arch) {
    std::vector<KernelSpec> specs = buildKernelSpecs(*matmulGraph(t, m), target);
    REQUIRE(specs.size() == 1);
    jobs.push_back({emitKernelSource(specs[0]), arch});
    return specs[0].gemm()->kernel;
  };
  CHECK(gemm(bf16, 512, targetFor(90, 132), "compute_90a") == GemmKernel::Wgmma);
  CHECK(gemm(f16, 512, targetFor(80, 108), "compute_80") == GemmKernel::TensorCore);
  CHECK(gemm(f32, 512, targetFor(80, 108), "compute_80") == GemmKernel::Simt);
  CHECK(gemm(bf16, 4, targetFor(90, 132), "compute_90a") == GemmKernel::Decode);
  for (const std::string &e : compileAll(jobs))
    FAIL_CHECK(e);
}
