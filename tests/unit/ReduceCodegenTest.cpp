// Reduce kernels before the GPU: what fusion makes of the composites (one kernel, its
// phases and thread layout), and that the CUDA C of generated reduction graphs compiles with
// NVRTC (the GPU suite checks the numbers: tests/gpu/ReductionGpuTest.cpp).
#include "codegen/CudaCodegen.h"
#include "codegen/KernelEmitter.h"
#include "codegen/KernelSpec.h"
#include "compiler/Compile.h"
#include "unit/EveryComposite.h"
#include "compiler/Nvrtc.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/Fusion.h"
#include "unit/RandomGraph.h"

#include <catch2/catch.hpp>
#include <regex>

using namespace kfuse;
using namespace kfuse::codegen;

namespace {
std::vector<KernelSpec> fusedSpecs(Graph &g) {
  fuseGraph(g);
  verify(g);
  return buildKernelSpecs(g);
}

/// h = x + r, returned beside rms_norm(h, w): residual + RMSNorm as models spell it.
void addRmsNorm(Graph &g, DType dt, int64_t rows, int64_t cols) {
  auto h = g.input("x", dt, {rows, cols}) + g.input("r", dt, {rows, cols});
  g.output(h);
  g.output(rms_norm(h, g.input("w", dt, {cols})));
}
} // namespace

TEST_CASE("reduce specs: softmax is one kernel of two phases over cached contiguous rows",
          "[reduce][codegen]") {
  Graph g("softmax");
  g.output(softmax(g.input("x", bf16, {64, 4096})));
  std::vector<KernelSpec> specs = fusedSpecs(g);
  REQUIRE(specs.size() == 1);
  const ReduceSpec *r = specs[0].reduce();
  REQUIRE(r);
  CHECK(std::string(kindName(specs[0].kind)) == "reduce");
  CHECK(r->rows == 64);
  CHECK(r->cols == 4096);
  CHECK(r->inner);
  CHECK(r->vec == 8);               // 16 bytes of bf16
  CHECK(r->threads * r->vec * r->steps >= 4096);
  CHECK(r->cache);                  // the row is read from memory once
  CHECK(r->phases() == 2);          // amax, then sum(exp(x - max))
  CHECK(specs[0].inputs.size() == 1);
  CHECK(specs[0].outputs.size() == 1);
  CHECK(specs[0].bytesMoved() == 2 * 64 * 4096 * 2); // x read once, y written once
}

TEST_CASE("reduce specs: residual + RMSNorm is one kernel with two outputs; a column sum is "
          "strided",
          "[reduce][codegen]") {
  Graph g("add_rms");
  addRmsNorm(g, bf16, 8, 8192);
  std::vector<KernelSpec> specs = fusedSpecs(g);
  REQUIRE(specs.size() == 1);
  REQUIRE(specs[0].reduce());
  CHECK(specs[0].reduce()->phases() == 1);
  CHECK(specs[0].outputs.size() == 2);
  CHECK(specs[0].inputs.size() == 3);

  Graph c("col");
  c.output(sum(c.input("x", f32, {1000, 24}), {0}));
  std::vector<KernelSpec> cs = fusedSpecs(c);
  REQUIRE(cs.size() == 1);
  REQUIRE(cs[0].reduce());
  CHECK_FALSE(cs[0].reduce()->inner);
  CHECK(cs[0].reduce()->rows == 24);
  CHECK(cs[0].reduce()->cols == 1000);
}

TEST_CASE("reduce fusion: a reduced value broadcast along the other axis is not fused, with "
          "its reason",
          "[reduce][fusion]") {
  Graph g("mis");
  auto x = g.input("x", f32, {4, 4});
  auto s = sum(x, {1}); // [4], which x - s broadcasts along columns
  g.output(x - s);
  FusionLog log;
  fuseGraph(g, &log);
  verify(g);
  CHECK(log.str().find("not over the rows the kernel reduces") != std::string::npos);
  CHECK(buildKernelSpecs(g).size() == 2);
}

/// The kernels of the generated graphs of seeds [first, last) with reductions compile with
/// NVRTC; returns how many of them are Reduce kernels.
static size_t compileGeneratedReduceKernels(uint64_t first, uint64_t last) {
  test::RandomGraphOptions o;
  o.matmuls = false;
  o.reductions = true;
  std::vector<KernelSpec> all;
  size_t reduceKernels = 0;
  for (uint64_t seed = first; seed < last; ++seed) {
    o.maxDim = seed % 5 == 4 ? 70 : 9;
    auto g = test::randomGraph(seed + 4242, o);
    std::vector<KernelSpec> specs = fusedSpecs(*g);
    for (KernelSpec &k : specs) {
      k.mangled = fmt::format("g{}_{}", seed, k.mangled); // one program: unique names
      reduceKernels += k.reduce() != nullptr;
      all.push_back(std::move(k));
    }
  }
  // In a few programs, so that NVRTC's time stays a few seconds; only whether they compile
  // is asked (the GPU differential runs them optimized), so NVVM and ptxas barely optimize.
  for (size_t b = 0; b < all.size(); b += 400) {
    std::vector<KernelSpec> batch(all.begin() + b, all.begin() + std::min(all.size(), b + 400));
    std::string src = emitProgram(batch);
    INFO(src.substr(0, 4000));
    CHECK_NOTHROW(
        compiler::nvrtcCompile(src, "sm_90a", false, compiler::CompileEffort::CheckOnly));
  }
  return reduceKernels;
}

// 300 graphs in two test cases, which ctest runs in parallel (together 6 s).
TEST_CASE("reduce codegen: the kernels of 300 generated graphs with reductions compile "
          "(seeds 0-149)",
          "[reduce][codegen][nvrtc]") {
  CHECK(compileGeneratedReduceKernels(0, 150) >= 100);
}

TEST_CASE("reduce codegen: the kernels of 300 generated graphs with reductions compile "
          "(seeds 150-299)",
          "[reduce][codegen][nvrtc]") {
  CHECK(compileGeneratedReduceKernels(150, 300) >= 100);
}

TEST_CASE("reduce codegen: softmax divides by the row's reciprocal, computed once per row",
          "[reduce][codegen]") {
  Graph g("softmax");
  g.output(softmax(g.input("x", f32, {64, 4096})));
  std::vector<KernelSpec> specs = fusedSpecs(g);
  REQUIRE(specs.size() == 1);
  std::string src = emitKernelSource(specs[0]);
  INFO(src);
  // The sum's reciprocal once, after the row's combine; the element op multiplies by it.
  size_t q = src.find("const float qt");
  REQUIRE(q != std::string::npos);
  CHECK(src.find("= 1.0f / t", q) == src.find('=', q));
  CHECK(src.find(" * qt") != std::string::npos);
  // No element divided by a row value: the only division is the reciprocal's.
  CHECK_FALSE(std::regex_search(src, std::regex("t[0-9]+ / t[0-9]+")));
}

TEST_CASE("reduce specs: rows too long for one CTA take clusters that leave room for two CTAs "
          "per SM",
          "[reduce][codegen]") {
  for (DType t : {bf16, f32}) {
    Graph g("softmax_long");
    g.output(softmax(g.input("x", t, {64, 131072})));
    std::vector<KernelSpec> specs = fusedSpecs(g);
    REQUIRE(specs.size() == 1);
    const ReduceSpec *r = specs[0].reduce();
    REQUIRE(r);
    CHECK(r->cache);
    CHECK(r->cluster == 8);     // 131072 / 8 / 512 threads: 32 values per thread
    CHECK(r->blocksPerSm == 2); // __launch_bounds__(512, 2)
    std::string src = emitKernelSource(specs[0]);
    CHECK(src.find("__launch_bounds__(512, 2)") != std::string::npos);
    // The CTA's share of the next row it takes, into L2 during this row's cluster barriers:
    // one prefetch per 128-byte line (16-byte vectors: every 8th thread).
    CHECK(src.find("const unsigned mn = m + (unsigned)gridDim.x / 8u;") != std::string::npos);
    CHECK(src.find("if (l % 8u == 0) kf_prefetch_l2(in0 + ((mn) * 131072u) + n0);") !=
          std::string::npos);
  }
  {
    // Rows one CTA holds: no cluster barriers to hide, no prefetch.
    Graph g("softmax_short");
    g.output(softmax(g.input("x", bf16, {64, 4096})));
    std::vector<KernelSpec> specs = fusedSpecs(g);
    REQUIRE(specs.size() == 1);
    REQUIRE(specs[0].reduce()->cluster == 1);
    CHECK(emitKernelSource(specs[0]).find("kf_prefetch_l2") == std::string::npos);
  }
  // Two cached inputs of 32 values each do not leave room: one CTA per SM.
  Graph g("add_rms_norm_long");
  auto h = g.input("x", bf16, {64, 131072}) + g.input("r", bf16, {64, 131072});
  g.output(h);
  g.output(rms_norm(h, g.input("w", bf16, {131072}), 1e-6));
  std::vector<KernelSpec> specs = fusedSpecs(g);
  REQUIRE(specs.size() == 1);
  CHECK(specs[0].reduce()->blocksPerSm == 1);
  CHECK(specs[0].reduce()->cluster == 8);
}

TEST_CASE("reduce codegen: a cluster's CTAs push their partials into each other's shared memory "
          "and wait on their own mbarrier, with no cluster barrier in the row loop",
          "[reduce][codegen]") {
  auto count = [](const std::string &s, const std::string &what) {
    size_t n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1))
      ++n;
    return n;
  };
  // LayerNorm: two phases (the mean, then the variance); softmax: the max, then the sum.
  for (bool norm : {false, true}) {
    Graph g("long_rows");
    auto x = g.input("x", bf16, {64, 131072});
    g.output(norm ? layer_norm(x, g.input("w", bf16, {131072}), g.input("b", bf16, {131072}), 1e-5)
                  : softmax(x));
    std::vector<KernelSpec> specs = fusedSpecs(g);
    REQUIRE(specs.size() == 1);
    REQUIRE(specs[0].reduce()->cluster == 8);
    const std::string full = emitKernelSource(specs[0]);
    const std::string src = full.substr(full.find("extern \"C\" __global__")); // the kernel
    INFO(src);
    // One barrier before the row loop (every mbarrier initialized), one after it (no CTA
    // leaves while a partial it pushed is on its way); none per phase.
    CHECK(count(src, "kf_cluster_sync();") == 1);
    CHECK(count(src, "kf_cluster_sync_relaxed();") == 1);
    CHECK(src.find("kf_cluster_sync();") < src.find("for (unsigned base"));
    CHECK(src.rfind("kf_cluster_sync_relaxed();") > src.rfind("kf_st_async_f32("));
    // Per phase: 8 partials of 4 bytes expected, one push per partial to each of the 8 CTAs
    // (threads 0-7), the wait, then the 8 combined in rank order from shared memory.
    CHECK(count(src, "kf_mbar_expect(kf_saddr(&mbx[b]), 32u);") == 2);
    CHECK(count(src, "kf_st_async_f32(") == 2);
    CHECK(count(src, "if (threadIdx.x < 8u)") == 2);
    CHECK(count(src, "kf_mbar_wait(kf_saddr(&mbx[b]), (xph >> 1) & 1u);") == 2);
    CHECK(count(src, "for (unsigned c = 1; c < 8u; ++c)") == 2);
    CHECK(src.find("kf_ld_cluster_f32") == std::string::npos);
    CHECK(src.find("  }\n  kf_cluster_sync_relaxed();\n}") != std::string::npos); // after the loop
  }
}

TEST_CASE("reduce codegen: a 16-bit row is cached as stored, so residual + RMSNorm in bf16 "
          "leaves room for four blocks of 256 threads per SM",
          "[reduce][codegen][nvrtc]") {
  Graph g("add_rms");
  addRmsNorm(g, bf16, 16384, 8192);
  compiler::CompiledModule m = compiler::compile(g);
  REQUIRE(m.kernels.size() == 1);
  const compiler::CompiledKernel &k = m.kernels[0];
  INFO(k.source);
  REQUIRE(k.spec.reduce());
  REQUIRE(k.spec.reduce()->cache);
  REQUIRE(k.launch.block == 256);
  // x and r (64 values per thread) in 32 registers each as bf16 pairs, not 64 as floats:
  // converted where each phase reads them.
  CHECK(k.source.find("unsigned short c0[") != std::string::npos);
  CHECK(k.source.find("float c0[") == std::string::npos);
  CHECK(k.source.find("kf_bf2f(c0[") != std::string::npos);
  // As f32 values, the cache took 99 registers: two blocks per SM.
  REQUIRE(k.ptxas.registers > 0);
  CHECK(k.ptxas.registers <= 64);
}

TEST_CASE("reduce specs: a cache of at most 32 values per thread stays f32 (packing it was "
          "slower); more is packed only where an input is 16-bit",
          "[reduce][codegen]") {
  auto spec = [](DType dt, int64_t rows, int64_t cols, bool residual) {
    Graph g("n");
    if (residual)
      addRmsNorm(g, dt, rows, cols);
    else
      g.output(rms_norm(g.input("x", dt, {rows, cols}), g.input("w", dt, {cols})));
    std::vector<KernelSpec> specs = fusedSpecs(g);
    REQUIRE(specs.size() == 1);
    REQUIRE(specs[0].reduce());
    return *specs[0].reduce();
  };
  ReduceSpec one = spec(bf16, 16384, 8192, false); // 4 steps of 8: 32 values
  CHECK(one.cache);
  CHECK(uint64_t(one.steps) * one.vec == 32);
  CHECK_FALSE(one.packed);
  ReduceSpec two = spec(bf16, 16384, 8192, true); // x and r: 64 values
  CHECK(two.cache);
  CHECK(two.packed);
  ReduceSpec f = spec(f32, 4096, 4096, true); // f32: nothing to pack
  CHECK(f.cache);
  CHECK_FALSE(f.packed);
  Graph g("sm");
  g.output(softmax(g.input("x", bf16, {16384, 8192})));
  std::string src = emitKernelSource(fusedSpecs(g)[0]);
  CHECK(src.find("float c0[32]") != std::string::npos);
}

TEST_CASE("reduce codegen: an uncached long row is unrolled by 4, not whole (NVRTC took "
          "6.6 s and a 491 KB cubin for softmax over rows of 2^20)",
          "[reduce][codegen][nvrtc]") {
  Graph g("long");
  g.output(softmax(g.input("x", bf16, {256, 1 << 20}))); // rows enough to fill the device
  compiler::CompiledModule m = compiler::compile(g);
  REQUIRE(m.kernels.size() == 1);
  const compiler::CompiledKernel &k = m.kernels[0];
  REQUIRE(k.spec.reduce());
  CHECK_FALSE(k.spec.reduce()->cache); // too long for a cluster's registers
  CHECK(k.spec.reduce()->steps > 8);
  CHECK(k.source.find("#pragma unroll 4") != std::string::npos);
  CHECK(k.cubin.size() < 100000);
}

TEST_CASE("reduce specs: few long rows are split over CTAs across the grid, two per SM, with "
          "a workspace; rows that fill the device are not",
          "[reduce][codegen]") {
  struct C {
    int64_t m, n;
    DType t;
    unsigned split; // expected CTAs per row (1: not split)
    bool cache;
  };
  // 132 SMs (the default target): 264 CTAs of 512 threads in flight.
  for (C c : {C{1, 1 << 24, bf16, 264, false}, C{1, 1 << 20, bf16, 64, true},
              C{4, 1 << 22, f32, 66, false}, C{3, 1000003, f16, 88, false},
              C{16, 1 << 20, bf16, 16, false}, C{200, 1 << 20, bf16, 1, false},
              C{4096, 131072, bf16, 1, true}, C{1, 4096, bf16, 1, true},
              C{1, 32768, bf16, 1, true}}) {
    Graph g("softmax");
    g.output(softmax(g.input("x", c.t, {c.m, c.n})));
    std::vector<KernelSpec> specs = fusedSpecs(g);
    REQUIRE(specs.size() == 1);
    const ReduceSpec &r = *specs[0].reduce();
    INFO(c.m << " x " << c.n << ": split " << r.split << ", cluster " << r.cluster << ", steps "
              << r.steps << ", cache " << r.cache);
    CHECK(r.split == c.split);
    CHECK(r.cache == c.cache);
    std::vector<KernelParam> params = emitterFor(specs[0]).params(specs[0]);
    LaunchConfig launch = specs[0].launchConfig(256, 132 * 8);
    if (c.split == 1) {
      CHECK(params.back().kind != KernelParam::Workspace);
      CHECK_FALSE(launch.cooperative());
      continue;
    }
    CHECK(r.cluster == 1);
    CHECK(r.threads == 512);
    CHECK(r.blocksPerSm == 2);
    // Every element in exactly one CTA's share: the shares cover the row, the last may be
    // shorter but not empty.
    CHECK(r.colsPerCta() % r.vec == 0);
    CHECK(r.colsPerCta() * r.split >= r.cols);
    CHECK(r.colsPerCta() * (r.split - 1) < r.cols);
    CHECK(uint64_t(r.steps) * 512 * r.vec >= uint64_t(r.colsPerCta()));
    // All resident at once, and launched so.
    CHECK(launch.grid == uint64_t(c.m) * r.split);
    CHECK(launch.grid <= 2 * 132);
    CHECK(launch.syncGroup == r.split);
    CHECK(launch.cooperative());
    CHECK(launch.grid % launch.gridMultiple() == 0);
    // softmax: two phases of one reduction; a counter per row, two buffers of partials.
    REQUIRE(params.back().kind == KernelParam::Workspace);
    CHECK(params.back().workspaceBytes == uint64_t(c.m) * 8 + 2 * 4 * uint64_t(c.m) * r.split);
    std::string src = emitKernelSource(specs[0]);
    CHECK(src.find("kf_group_sync(ctr, " + std::to_string(r.split) + "u)") != std::string::npos);
    CHECK(src.find("void *__restrict__ ws)") != std::string::npos);
  }
}

TEST_CASE("reduce codegen: split rows compile with NVRTC for every composite and dtype, within "
          "the registers of two CTAs of 512 per SM",
          "[reduce][codegen][nvrtc]") {
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1 << 21}, {3, 1000003}};
  for (DType t : {f32, bf16, f16})
    for (auto [m, n] : shapes) {
      Graph g("split");
      test::addEveryComposite(g, t, m, n);
      compiler::CompiledModule mod = compiler::compile(g);
      for (const compiler::CompiledKernel &k : mod.kernels) {
        const ReduceSpec *r = k.spec.reduce();
        if (!r)
          continue;
        INFO(dtypeName(t) << " [" << m << ", " << n << "] " << k.spec.name);
        CHECK(r->split > 1);
        CHECK(k.ptxas.registers <= 64);
        CHECK(k.ptxas.spillStores == 0);
      }
    }
}
