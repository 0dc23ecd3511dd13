// The compiler driver (compiler/Compile.h) without a GPU: one compile() builds every stage
// once; its module is reported and dumped without compiling again; kernels compile in
// parallel to the same cubins as one after another; planning modes; ptxas reports.
#include "compiler/Compile.h"
#include "compiler/Dump.h"
#include "compiler/KernelCache.h"
#include "codegen/KernelEmitter.h"
#include "ir/ParallelFor.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/KernelRegion.h"
#include "ir/Verifier.h"
#include "passes/Fusion.h"
#include "analysis/Report.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace kfuse;
using namespace kfuse::compiler;
namespace fs = std::filesystem;

namespace {

/// gelu(x W^T + b) and two elementwise outputs of other shapes: three kernels fused.
std::unique_ptr<Graph> threeKernels() {
  auto g = std::make_unique<Graph>("three");
  Value x = g->input("x", DType::BF16, {64, 256});
  Value w = g->input("w", DType::BF16, {128, 256});
  Value b = g->input("b", DType::BF16, {128});
  Value h = gelu_tanh(matmul(x, w, {false, true}) + b);
  h->setName("h");
  g->output(h);
  Value s = g->input("s", DType::F32, {1000});
  g->output(silu(s * 2.0));
  Value t = g->input("t", DType::F16, {33, 7});
  g->output(exp(t) - t);
  return g;
}

/// A fresh KFUSE_CACHE_DIR for one test, so compiles are really compiles.
struct FreshCache {
  fs::path dir = fs::temp_directory_path() / fmt::format("kfuse-compile-test-{}", ::getpid());
  FreshCache() {
    fs::remove_all(dir);
    ::setenv("KFUSE_CACHE_DIR", dir.c_str(), 1);
    clearMemoryCache();
  }
  ~FreshCache() {
    ::unsetenv("KFUSE_CACHE_DIR");
    clearMemoryCache();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

const Node *findById(const Graph &g, unsigned id) {
  for (const Node *n : g.nodes())
    if (n->id() == id)
      return n;
  FAIL("no node with id " << id);
  return nullptr;
}

std::string readFile(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace

TEST_CASE("compile: one call runs every stage; report and dump reuse the module", "[compile]") {
  FreshCache cache;
  auto g = threeKernels();
  CompileOptions o;
  o.jobs = 2;
  o.keepPassDumps = true;
  CompiledModule m = compile(*g, o);
  REQUIRE(m.kernels.size() == 3);
  CHECK(m.arch == "sm_90a");
  CHECK(m.plan->kernelNames().size() == 3);
  CHECK(m.inputIds.size() == 5);
  CHECK(m.outputIds.size() == 3);
  for (const CompiledKernel &k : m.kernels) {
    INFO(k.spec.mangled);
    CHECK_FALSE(k.cubin.empty());
    CHECK(k.source.find("extern \"C\" __global__") != std::string::npos);
    CHECK(k.source.find(k.spec.mangled) != std::string::npos);
    CHECK(k.ptxas.registers > 0); // ptxas -v's report, parsed
    CHECK(k.ptxas.spillStores == 0);
    CHECK(k.estimate.seconds > 0);
    CHECK_FALSE(k.cached);
  }
  CHECK(m.kernels[0].spec.gemm()); // the matmul's kernel comes first (producers first)
  CHECK(m.expectedSeconds() > 0);

  // Reporting and dumping read the module: no pass, no codegen, no NVRTC again.
  CacheStats before = cacheStatsSnapshot();
  TrafficReport r = buildReport(*m.input, m.plan->clone(), m.fusion, m.target);
  CHECK(r.fused.kernels.size() == 3);
  fs::path dir = cache.dir / "dump";
  writeDump(m, dir.string());
  CacheStats after = cacheStatsSnapshot();
  CHECK(after.compiles == before.compiles);
  CHECK(after.memoryHits == before.memoryHits);
  CHECK(after.diskHits == before.diskHits);
  fs::path root = dir / "three";
  CHECK(readFile(root / "00-input.kf").find("graph three") != std::string::npos);
  CHECK(readFile(root / "04-after-fuse.kf").find("kernel k2") != std::string::npos);
  CHECK(readFile(root / "plan.kf") == readFile(root / "04-after-fuse.kf"));
  std::string json = readFile(root / "kernels.json");
  CHECK(json.find("\"registers\": " + std::to_string(m.kernels[0].ptxas.registers)) !=
        std::string::npos);
  for (const CompiledKernel &k : m.kernels)
    CHECK(readFile(root / "kernels" / (k.spec.mangled + ".cu")) == k.source);

  // A second compile of the same graph finds every kernel in the cache.
  CompiledModule again = compile(*g, o);
  for (size_t i = 0; i < again.kernels.size(); ++i) {
    CHECK(again.kernels[i].cached);
    CHECK(again.kernels[i].cubin == m.kernels[i].cubin);
    CHECK(again.kernels[i].ptxas.registers == m.kernels[i].ptxas.registers);
  }
}

TEST_CASE("compile: kernels compiled on several threads equal those compiled on one",
          "[compile]") {
  auto g = threeKernels();
  CompileOptions one, four;
  one.planning = four.planning = Planning::Unfused; // 7 kernels
  one.target.archSpecific = four.target.archSpecific = false;
  one.target.sm = four.target.sm = 80;
  one.jobs = 1;
  four.jobs = 4;
  FreshCache cache;
  CompiledModule a = compile(*g, one);
  clearMemoryCache();
  fs::remove_all(cache.dir); // compile again for real, in parallel
  CompiledModule b = compile(*g, four);
  REQUIRE(a.kernels.size() == 7);
  REQUIRE(b.kernels.size() == a.kernels.size());
  CHECK(b.jobs == 4);
  for (size_t i = 0; i < a.kernels.size(); ++i) {
    INFO(a.kernels[i].spec.mangled);
    CHECK(b.kernels[i].spec.mangled == a.kernels[i].spec.mangled);
    CHECK(b.kernels[i].source == a.kernels[i].source);
    CHECK(b.kernels[i].cubin == a.kernels[i].cubin);
    CHECK_FALSE(b.kernels[i].cached);
  }
}

TEST_CASE("compile: planning modes and stages", "[compile]") {
  auto g = threeKernels();
  CompileOptions o;
  o.until = Stage::Source;
  CHECK(compile(*g, o).kernels.size() == 3);
  o.planning = Planning::Unfused;
  CompiledModule unfused = compile(*g, o);
  CHECK(unfused.kernels.size() == 7);
  CHECK(unfused.kernels[0].cubin.empty()); // stopped before NVRTC
  CHECK_FALSE(unfused.kernels[0].source.empty());
  // AsGiven keeps a plan made earlier: the fused plan compiles to the fused kernels.
  o.planning = Planning::Fused;
  CompiledModule fused = compile(*g, o);
  o.planning = Planning::AsGiven;
  CompiledModule given = compile(*fused.plan, o);
  REQUIRE(given.kernels.size() == fused.kernels.size());
  for (size_t i = 0; i < given.kernels.size(); ++i)
    CHECK(given.kernels[i].source == fused.kernels[i].source);
  // The module names nodes by the caller's ids: a graph fused in place (inputs moved first,
  // so program order is no longer creation order) keeps them through compile()'s copy.
  auto byHand = threeKernels();
  fuseGraph(*byHand);
  CompiledModule mine = compile(*byHand, o);
  REQUIRE(mine.kernels.size() == 3);
  for (const CompiledKernel &k : mine.kernels) {
    for (const codegen::SpecTensor &t : k.spec.inputs)
      CHECK(findById(*byHand, t.nodeId)->type().str() == t.type.str());
    for (const codegen::SpecOutput &out : k.spec.outputs)
      CHECK(findById(*byHand, out.tensor.nodeId)->type().str() == out.tensor.type.str());
  }
  for (size_t i = 0; i < byHand->inputs().size(); ++i)
    CHECK(mine.inputIds[i] == byHand->inputs()[i]->id());
  o.until = Stage::Plan;
  CompiledModule plan = compile(*g, o);
  CHECK(plan.kernels.empty());
  CHECK(plan.outputIds.size() == 3);
}

TEST_CASE("compile: TF32 is the user's policy, applied to the target once", "[compile]") {
  Graph g("f32mm");
  Value a = g.input("a", DType::F32, {256, 128});
  Value b = g.input("b", DType::F32, {64, 128});
  g.output(matmul(a, b, {false, true}));
  CompileOptions o;
  o.until = Stage::Source;
  CompiledModule exact = compile(g, o);
  o.allowTf32 = true;
  CompiledModule tf32 = compile(g, o);
  REQUIRE(exact.kernels[0].spec.gemm());
  REQUIRE(tf32.kernels[0].spec.gemm());
  CHECK_FALSE(exact.kernels[0].spec.gemm()->tf32());
  CHECK(tf32.kernels[0].spec.gemm()->tf32());
  CHECK(tf32.allowTf32);
}

TEST_CASE("compile: an NVRTC failure in one kernel stops the compile with its error",
          "[compile]") {
  std::atomic<int> ran{0};
  auto body = [&](size_t i) {
    ++ran;
    if (i == 3)
      fail("kernel {} failed", i);
  };
  CHECK_THROWS_WITH(parallelFor(50, 4, body), "kernel 3 failed");
  CHECK(ran.load() < 50 + 4); // the others stopped taking work (each ran at most once)
  std::vector<int> seen(100, 0);
  parallelFor(100, 8, [&](size_t i) { ++seen[i]; });
  CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
}

TEST_CASE("compile: ptxas -v's report is read per kernel", "[compile]") {
  std::string log = "ptxas info    : 0 bytes gmem\n"
                    "ptxas info    : Compiling entry function 'kf0_a' for 'sm_90a'\n"
                    "ptxas info    : Function properties for kf0_a\n"
                    "    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
                    "ptxas info    : Used 168 registers, used 1 barriers, 2048 bytes smem\n"
                    "ptxas info    : Compiling entry function 'kf1_b' for 'sm_90a'\n"
                    "ptxas info    : Function properties for kf1_b\n"
                    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                    "ptxas info    : Used 22 registers, used 0 barriers\n";
  PtxasInfo a = parsePtxasInfo(log, "kf0_a");
  CHECK(a.registers == 168);
  CHECK(a.stackBytes == 8);
  CHECK(a.spillStores == 4);
  CHECK(a.spillLoads == 12);
  CHECK(a.sharedBytes == 2048);
  PtxasInfo b = parsePtxasInfo(log, "kf1_b");
  CHECK(b.registers == 22);
  CHECK(b.sharedBytes == 0);
  CHECK(parsePtxasInfo(log, "kf2_c").registers == -1);
}

TEST_CASE("kernel kinds: each kind's emitter gives its launch and its parameters as data",
          "[compile][codegen]") {
  auto g = threeKernels();
  CompileOptions o;
  o.until = Stage::Source;
  CompiledModule m = compile(*g, o);
  const codegen::KernelSpec &gemm = m.kernels[0].spec;
  REQUIRE(gemm.gemm());
  CHECK(std::string(codegen::kindName(gemm.kind)) == "wgmma");
  std::vector<codegen::KernelParam> p = codegen::emitterFor(gemm).params(gemm);
  // wgmma: A's and B's tensor maps first, then every input and output pointer.
  REQUIRE(p.size() == 2 + gemm.inputs.size() + gemm.outputs.size());
  CHECK(p[0].kind == codegen::KernelParam::TensorMap);
  CHECK(p[0].index == 0);
  CHECK(p[0].map == &gemm.gemm()->tmaA);
  CHECK(p[1].kind == codegen::KernelParam::TensorMap);
  CHECK(p[1].map == &gemm.gemm()->tmaB);
  CHECK(p[2].kind == codegen::KernelParam::Pointer);
  CHECK(p[2].aligned16);
  CHECK(p.back().output);
  const codegen::KernelSpec &pw = m.kernels[1].spec;
  CHECK(std::holds_alternative<codegen::Pointwise>(pw.kind));
  CHECK(std::string(codegen::kindName(pw.kind)) == "pointwise");
  std::vector<codegen::KernelParam> q = codegen::emitterFor(pw).params(pw);
  REQUIRE(q.size() == pw.inputs.size() + pw.outputs.size());
  for (const codegen::KernelParam &x : q) {
    CHECK(x.kind == codegen::KernelParam::Pointer);
    CHECK_FALSE(x.aligned16);
  }
  CHECK(pw.launchConfig(256, 1000).block == 256);
  CHECK(gemm.launchConfig(256, 1000).block == gemm.gemm()->threads());
  CHECK(pw.flops() == double(pw.ops.size()) * double(pw.numel()));
}

TEST_CASE("kernel regions: one rule for fusion, the verifier and codegen", "[compile][fusion]") {
  // A broadcast producer recomputed into a matmul's epilogue may come before the matmul in
  // program order; the kernel is still a Gemm kernel (the matmul emitted first).
  Graph g("recompute");
  Value x = g.input("x", DType::F32, {4, 8});
  Value w = g.input("w", DType::F32, {8, 16});
  Value b = g.input("b", DType::F32, {16});
  Value gb = gelu(b);
  g.output(matmul(x, w) + gb);
  CompileOptions o;
  o.until = Stage::Source;
  CompiledModule m = compile(g, o);
  for (const CompiledKernel &k : m.kernels)
    if (k.spec.gemm())
      CHECK(k.spec.ops[0].kind == OpKind::MatMul);
  // Two matmuls in one region: the verifier refuses it with the rule's reason.
  Graph two("two");
  Value a = two.input("a", DType::F32, {4, 4});
  Value p = matmul(a, a), q = matmul(p, a);
  two.output(q);
  int k = two.addKernel("k0");
  p->setKernel(k);
  q->setKernel(k);
  CHECK_THROWS_WITH(verify(two), Catch::Contains("a matmul never fuses into another matmul kernel"));
  RegionSummary r;
  CHECK_FALSE(classifyRegion({p.node(), q.node()}, &r));
  CHECK(classifyRegion({p.node()}, &r));
  CHECK(r.kind == RegionKind::Gemm);
}
