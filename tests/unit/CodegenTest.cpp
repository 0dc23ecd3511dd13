// Codegen and the GPU-free half of the runtime: kernel specs, the emitted CUDA source
// (golden), NVRTC compiles, the kernel cache and the memory planner.
#include "codegen/CudaCodegen.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "passes/Fusion.h"
#include "analysis/Traffic.h"
#include "compiler/KernelCache.h"
#include "runtime/MemoryPlan.h"
#include "compiler/Nvrtc.h"
#include "runtime/Schedule.h"
#include "unit/RandomGraph.h"

#include <catch2/catch.hpp>
#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace kfuse;
using namespace kfuse::codegen;

static std::string kernelPart(const std::string &src) {
  size_t at = src.find("\nstatic __device__ __forceinline__ void kf0");
  REQUIRE(at != std::string::npos);
  return src.substr(at + 1);
}

TEST_CASE("golden: the seed doubling kernel, n=10, 4 threads per block", "[codegen]") {
  Graph g("seed");
  Value x = g.input("x", f32, {10});
  Value y = x * 2.0;
  y->setName("y.out");
  g.output(y);
  std::vector<KernelSpec> specs = buildKernelSpecs(g);
  REQUIRE(specs.size() == 1);
  LaunchConfig c = specs[0].launchConfig(4, 1000);
  CHECK(c.block == 4);
  CHECK(c.grid == 3); // 12 threads for 10 elements: two idle
  CHECK(specs[0].mangled == "kf0_y_2Eout");
  std::string src = emitProgram(specs, {.block = 4});
  CHECK(
      kernelPart(src) ==
      R"(static __device__ __forceinline__ void kf0_y_2Eout_elem(unsigned i, const float *__restrict__ in0, float *__restrict__ out0, float a0, float &r0) {
  (void)i;
  const float t0 = a0;  // %x
  const float t1 = t0 * 2.0f;  // %y.out = mul %x, 2.0
  r0 = t1;  // output %y.out
}

extern "C" __global__ void __launch_bounds__(4) kf0_y_2Eout(const float *__restrict__ in0, float *__restrict__ out0) {
  const unsigned n = 10u;
  const unsigned stride = (unsigned)gridDim.x * blockDim.x;
  const unsigned tid = (unsigned)blockIdx.x * blockDim.x + threadIdx.x;
  for (unsigned i = 0u + tid; i < n; i += stride) kf0_y_2Eout_elem(i, in0, out0, in0[i], out0[i]);
}
)");
  CHECK(emitProgram(buildKernelSpecs(g), {.block = 4}) == src); // byte-for-byte stable
}

static std::unique_ptr<Graph> geluGraph(int64_t rows, int64_t cols, bool fused) {
  auto g = std::make_unique<Graph>("gelu");
  Value x = g->input("x", bf16, {rows, cols});
  Value a = g->input("a", bf16, {cols});
  Value b = g->input("b", bf16, {rows, 1});
  g->output(gelu_tanh(x * a + b));
  if (fused) {
    int k = g->addKernel("gelu");
    for (Node *n : g->nodes())
      if (!n->isInput())
        n->setKernel(k);
  }
  return g;
}

TEST_CASE("fused kernel: broadcast by index arithmetic, 16-byte vectors, one kernel", "[codegen]") {
  auto g = geluGraph(65536, 4096, true);
  std::vector<KernelSpec> specs = buildKernelSpecs(*g);
  REQUIRE(specs.size() == 1);
  CHECK(specs[0].inputs.size() == 3);
  CHECK(specs[0].outputs.size() == 1);
  CHECK(specs[0].vectorWidth() == 8);
  // By default one vector step per iteration; the column is then one value per vector.
  std::string one = emitProgram(specs);
  CHECK(one.find("a2 = in2[i / 4096u];") != std::string::npos);
  CHECK(one.find("[u]") == std::string::npos);
  std::string src = emitProgram(specs, {.unroll = 2});
  // The row is read as 16-byte vectors at its own offset, the column once per vector
  // (its value is the same for the 8 elements), x as 16-byte vectors at the linear index.
  CHECK(src.find("*reinterpret_cast<const uint4 *>(in1 + ((i) % 4096u))") != std::string::npos);
  CHECK(src.find("a2[u] = in2[i / 4096u];") != std::string::npos);
  CHECK(src.find("*reinterpret_cast<const uint4 *>(in0 + i)") != std::string::npos);
  // The scalar tail reads every tensor element by element.
  CHECK(src.find("in0[i], in1[(i) % 4096u], in2[i / 4096u], out0[i]") != std::string::npos);
  // Alignment is checked for every tensor read or written as vectors.
  CHECK(src.find("(unsigned long long)in0 | (unsigned long long)in1 | (unsigned long long)out0") !=
        std::string::npos);
  CHECK(src.find("kf_f2bf(") != std::string::npos);
  CHECK(src.find("unsigned n = 268435456u") != std::string::npos);
}

TEST_CASE("unfused plan: one kernel per op, intermediates cross kernels", "[codegen]") {
  auto g = geluGraph(3, 5, false);
  std::vector<KernelSpec> specs = buildKernelSpecs(*g);
  REQUIRE(specs.size() == 3);
  CHECK(specs[1].inputs.size() == 2);
  CHECK(specs[0].vectorWidth() == 1); // tiny
}

TEST_CASE("64-bit indices only at 2^31 elements and beyond", "[codegen]") {
  Graph g("wide");
  g.output(g.input("x", f32, {int64_t(1) << 31}) * 3.0);
  std::vector<KernelSpec> specs = buildKernelSpecs(g);
  CHECK(specs[0].wide());
  CHECK(emitProgram(specs).find("const unsigned long long n = 2147483648ull;") !=
        std::string::npos);
  Graph h("narrow");
  h.output(h.input("x", f32, {(int64_t(1) << 31) - 1}) * 3.0);
  CHECK_FALSE(buildKernelSpecs(h)[0].wide());
}

TEST_CASE("user names are mangled, a lone matmul is a GEMM kernel", "[codegen]") {
  CHECK(mangle("a b*/") == "a_20b_2A_2F");
  Graph g("mm");
  Value a = g.input("a", f32, {4, 8});
  Value b = g.input("b", f32, {8, 2});
  g.output(matmul(a, b));
  std::vector<KernelSpec> specs = buildKernelSpecs(g);
  REQUIRE(specs.size() == 1);
  REQUIRE(specs[0].gemm());
  CHECK(specs[0].ops.size() == 1);
  CHECK(specs[0].outputs.size() == 1);
}

TEST_CASE("NaN-aware max/min/relu and literal spelling", "[codegen]") {
  Graph g("nan");
  Value x = g.input("x", f16, {7});
  g.output(relu(max(x, 1e30) + min(x, -0.5)));
  std::string src = emitProgram(buildKernelSpecs(g));
  CHECK(src.find("kf_max(t0, 1.00000002e+30f)") != std::string::npos);
  CHECK(src.find("kf_min(t0, -0.5f)") != std::string::npos);
  CHECK(src.find("fmaxf(a, b)") != std::string::npos);
  CHECK(src.find("(a != a || b != b) ? kf_nan()") != std::string::npos);
}

TEST_CASE("an f16/bf16 exp is the fast __expf, an f32 exp stays expf", "[codegen]") {
  for (DType dt : {f16, bf16, f32}) {
    Graph g("exps");
    Value x = g.input("x", dt, {7});
    g.output(exp(x));
    std::string src = emitProgram(buildKernelSpecs(g));
    bool fast = src.find("__expf(t0)") != std::string::npos;
    bool exact = src.find(" expf(t0)") != std::string::npos;
    INFO(dtypeName(dt));
    CHECK(fast == (dt != f32));
    CHECK(exact == (dt == f32));
  }
}

TEST_CASE("pow by a small integer literal is multiplies; any other exponent is powf", "[codegen]") {
  Graph g("pows");
  Value x = g.input("x", f32, {7});
  Value y = g.input("y", f32, {7});
  g.output(pow(x, 3.0) + pow(x, 2.0) + pow(x, 4.0) + pow(x, -1.0) + pow(x, 1.0) + pow(x, 0.0));
  g.output(pow(x, 0.5) + pow(x, y));
  std::string src = emitProgram(buildKernelSpecs(g));
  CHECK(src.find("(t0 * t0 * t0)") != std::string::npos);
  CHECK(src.find("(t0 * t0)") != std::string::npos);
  CHECK(src.find("((t0 * t0) * (t0 * t0))") != std::string::npos);
  CHECK(src.find("(1.0f / t0)") != std::string::npos);
  // 0.5 stays powf: sqrtf(-0) is -0 and sqrtf(-inf) NaN where pow gives +0 and +inf.
  CHECK(src.find("powf(t0, 0.5f)") != std::string::npos);
  CHECK(src.find("powf(t0, t1)") != std::string::npos);
  CHECK(src.find("powf(t0, 3") == std::string::npos);
}

TEST_CASE("NVRTC compiles every kernel of a program to an sm_90 cubin without a GPU", "[nvrtc]") {
  auto g = geluGraph(65536, 4096, true);
  std::string src = emitProgram(buildKernelSpecs(*g));
  compiler::CompiledProgram p = compiler::nvrtcCompile(src, "sm_90", true);
  CHECK(p.cubin.size() > 1000);
  CHECK(p.cubin.compare(0, 4,
                        "\x7f"
                        "ELF") == 0);
  CHECK(p.ptx.find(".entry kf0_gelu") != std::string::npos);
}

TEST_CASE("a failed NVRTC compile names the log, options and dumped source", "[nvrtc]") {
  try {
    compiler::nvrtcCompile("this is not CUDA", "sm_90", false);
    FAIL("expected an error");
  } catch (const Error &e) {
    std::string m = e.what();
    CHECK(m.find("--gpu-architecture=sm_90") != std::string::npos);
    CHECK(m.find("failed-") != std::string::npos);
    CHECK(m.find("error") != std::string::npos);
  }
}

TEST_CASE("kernel cache: disk entries are checked and a corrupt one is recompiled", "[cache]") {
  // One folder per process: ctest runs test cases in parallel processes.
  std::string dir = (std::filesystem::temp_directory_path() /
                     ("kfuse-cache-test-" + std::to_string(::getpid())))
                        .string();
  std::filesystem::remove_all(dir);
  setenv("KFUSE_CACHE_DIR", dir.c_str(), 1);
  Graph g("cache");
  g.output(exp(g.input("x", f32, {123})) + 0.25);
  std::string src = emitProgram(buildKernelSpecs(g));
  compiler::CacheStats before = compiler::cacheStats();
  std::string c1 = compiler::cachedCubin(src, "sm_90");
  CHECK(compiler::cacheStats().compiles == before.compiles + 1);
  std::string path = compiler::cacheEntryPath(src, "sm_90");
  // Header: magic, key hash, size, checksum.
  CHECK(std::filesystem::file_size(path) == c1.size() + 32);
  CHECK(compiler::cachedCubin(src, "sm_90") == c1); // memory hit
  CHECK(compiler::cacheStats().memoryHits == before.memoryHits + 1);
  // Another program with the same disk entry corrupted: recompiled, not loaded.
  std::string src2 = src + "\n// variant\n";
  std::string c2 = compiler::cachedCubin(src2, "sm_90");
  std::string path2 = compiler::cacheEntryPath(src2, "sm_90");
  {
    std::fstream f(path2, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x55');
  }
  compiler::clearMemoryCache();
  compiler::CacheStats mid = compiler::cacheStats();
  CHECK(compiler::cachedCubin(src, "sm_90") == c1); // intact entry: a disk hit
  CHECK(compiler::cacheStats().diskHits == mid.diskHits + 1);
  CHECK(compiler::cachedCubin(src2, "sm_90") == c2); // corrupt entry: recompiled
  CHECK(compiler::cacheStats().corrupt == mid.corrupt + 1);
  CHECK(compiler::cacheStats().compiles == mid.compiles + 1);
  CHECK(std::filesystem::file_size(path2) == c2.size() + 32);
  unsetenv("KFUSE_CACHE_DIR");
  std::filesystem::remove_all(dir);
}

TEST_CASE("memory plan: intermediates share the arena by liveness", "[plan]") {
  Graph g("chain");
  Value x = g.input("x", f32, {1000});
  Value y = exp(neg(abs(x) * 2.0) + 1.0); // five kernels, four intermediates
  g.output(y);
  std::vector<KernelSpec> specs = buildKernelSpecs(g);
  REQUIRE(specs.size() == 5);
  runtime::MemoryPlan plan = runtime::planMemory(specs, {x->id(), y->id()});
  CHECK(plan.slots.size() == 4);
  CHECK(plan.naiveBytes == 4 * 4096);
  CHECK(plan.peakBytes == 2 * 4096); // each value dies when the next kernel has read it
}

TEST_CASE("kernel specs move the bytes the traffic model predicts", "[codegen]") {
  test::RandomGraphOptions opts; // matmuls (with their epilogues) included
  Target h200 = parseTarget("h200");
  for (uint64_t seed = 0; seed < 300; ++seed) {
    std::unique_ptr<Graph> g = test::randomGraph(seed, opts);
    if (seed % 2)
      fuseGraph(*g);
    int64_t bytes = 0;
    double flops = 0;
    for (const KernelSpec &k : buildKernelSpecs(*g)) {
      bytes += k.bytesMoved();
      flops += k.flops();
    }
    TrafficPlan plan = fusedTraffic(*g, h200);
    INFO("seed " << seed);
    CHECK(bytes == plan.bytes());
    // A fused kernel evaluates every op at every point of its iteration shape, so an op on
    // a smaller (broadcast) shape is recomputed: at least the model's FLOPs, never fewer.
    CHECK(flops >= plan.flops);
  }
}

/// Whether kernel j waits for kernel k, directly or through others.
static bool waitsFor(const std::vector<std::vector<unsigned>> &deps, unsigned j, unsigned k) {
  for (unsigned d : deps[j])
    if (d == k || (d > k && waitsFor(deps, d, k)))
      return true;
  return false;
}

TEST_CASE("schedule: independent kernels get no edge; data and reused slots do", "[plan]") {
  // The seed's diagram: K1 -> K2 and K3 -> K4; K2 and K3 can run side by side.
  Graph g("diamond");
  Value x = g.input("x", f32, {1000});
  Value a = exp(x);
  Value b = neg(a), c = abs(a);
  g.output(b + c);
  std::vector<KernelSpec> specs = buildKernelSpecs(g);
  REQUIRE(specs.size() == 4);
  runtime::MemoryPlan plan = runtime::planMemory(specs, {x->id(), g.outputs()[0]->id()});
  std::vector<std::vector<unsigned>> deps = runtime::kernelDependencies(specs, plan);
  CHECK(deps[0].empty());
  CHECK(deps[1] == std::vector<unsigned>{0});
  CHECK(deps[2] == std::vector<unsigned>{0});
  CHECK(deps[3] == std::vector<unsigned>{1, 2});

  // A chain whose intermediates reuse arena bytes: the kernel that overwrites a slot waits
  // for the last reader of what it held.
  Graph h("chain");
  Value v = h.input("x", f32, {1000});
  for (int i = 0; i < 6; ++i)
    v = neg(v);
  h.output(v);
  specs = buildKernelSpecs(h);
  plan = runtime::planMemory(specs, {h.inputs()[0]->id(), h.outputs()[0]->id()});
  REQUIRE(plan.peakBytes < plan.naiveBytes); // bytes are reused
  deps = runtime::kernelDependencies(specs, plan);
  for (unsigned j = 1; j < deps.size(); ++j) // reduced to a straight line
    CHECK(deps[j] == std::vector<unsigned>{j - 1});
  for (const runtime::MemoryPlan::Slot &s : plan.slots)
    for (const runtime::MemoryPlan::Slot &t : plan.slots)
      if (s.offset == t.offset && s.first < t.first && s.last < t.first) {
        INFO("slot of kernel " << t.first << " reuses that of kernel " << s.first);
        CHECK(waitsFor(deps, t.first, s.last));
      }
}

TEST_CASE("schedule: every data dependency of random programs is an edge", "[plan]") {
  for (uint64_t seed = 0; seed < 300; ++seed) {
    std::unique_ptr<Graph> g = test::randomGraph(seed, {});
    if (seed % 2)
      fuseGraph(*g);
    std::vector<KernelSpec> specs = buildKernelSpecs(*g);
    std::vector<unsigned> external;
    for (const Node *n : g->inputs())
      external.push_back(n->id());
    for (const Node *n : g->outputs())
      external.push_back(n->id());
    runtime::MemoryPlan plan = runtime::planMemory(specs, external);
    std::vector<std::vector<unsigned>> deps = runtime::kernelDependencies(specs, plan);
    std::map<unsigned, unsigned> producer;
    for (const KernelSpec &k : specs)
      for (const SpecOutput &o : k.outputs)
        producer[o.tensor.nodeId] = k.index;
    for (const KernelSpec &k : specs)
      for (const SpecTensor &t : k.inputs)
        if (auto it = producer.find(t.nodeId);
            it != producer.end() && k.numel() > 0 && specs[it->second].numel() > 0) {
          INFO("seed " << seed << ": kernel " << k.index << " reads what kernel " << it->second
                       << " writes");
          CHECK(waitsFor(deps, k.index, it->second));
        }
  }
}

TEST_CASE("a stored bf16 value is rounded once, and later ops in the kernel read it rounded",
          "[codegen]") {
  // y = gelu(x) is an output (bf16) and z = cast(y, f32) too: z must be exactly bf16(y).
  Graph g("mlp_tail");
  Value x = g.input("x", bf16, {4096});
  Value y = gelu(x);
  g.output(y);
  g.output(cast(y, f32));
  int k = g.addKernel("tail");
  for (Node *n : g.nodes())
    if (!n->isInput())
      n->setKernel(k);
  std::string src = emitProgram(buildKernelSpecs(g));
  CHECK(src.find("const float t1 = kf_bf2f(kf_f2bf(kf_gelu(t0)));") != std::string::npos);
  CHECK(src.find("const float t2 = t1;") != std::string::npos); // the cast reads the rounded y
}
