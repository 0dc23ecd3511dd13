// Reduce kernels before the GPU: what fusion makes of the composites (one kernel, its
// phases and thread layout), and that the CUDA C of generated reduction graphs compiles with
// NVRTC (the GPU suite checks the numbers: tests/gpu/ReductionGpuTest.cpp).
#include "codegen/CudaCodegen.h"
#include "codegen/KernelEmitter.h"
#include "codegen/KernelSpec.h"
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
  // amax and sum(exp(x - max)) in one phase: the sum is online, each part against its own max
  CHECK(r->phases() == 1);
  std::vector<int> online(specs[0].ops.size(), -1);
  for (size_t i = 0; i < specs[0].ops.size(); ++i)
    if (specs[0].ops[i].kind == OpKind::Sum) {
      REQUIRE(specs[0].ops[specs[0].ops[i].args[0].index].kind == OpKind::Exp);
      online[i] = 0; // %m = amax %x is op 0
    }
  CHECK(r->online == online);
  std::string src = emitKernelSource(specs[0]);
  CHECK(src.find("kf_warp_online<32>(a0, a3);") != std::string::npos);
  CHECK(src.find("a3 += __expf(e0 - a0);") != std::string::npos);
  CHECK(src.find("kf_online_add(a0, a3, red[") != std::string::npos);
  CHECK(specs[0].inputs.size() == 1);
  CHECK(specs[0].outputs.size() == 1);
  CHECK(specs[0].bytesMoved() == 2 * 64 * 4096 * 2); // x read once, y written once
}

TEST_CASE("reduce specs: a sum of exp(x - m) is online only for m = amax(x) with no output in "
          "between",
          "[reduce][codegen]") {
  auto spec = [](Graph &g) {
    std::vector<KernelSpec> specs = fusedSpecs(g);
    REQUIRE(specs.size() == 1);
    REQUIRE(specs[0].reduce());
    return *specs[0].reduce();
  };
  auto anyOnline = [](const ReduceSpec &r) {
    return std::any_of(r.online.begin(), r.online.end(), [](int m) { return m >= 0; });
  };
  {
    // The user's own spelling, through a cast: x = cast(in), m = amax(x): online.
    Graph g("own");
    Value x = cast(g.input("x", bf16, {16, 4096}), f32);
    Value m = amax(x, {-1}, true);
    Value e = exp(x - m);
    g.output(e / sum(e, {-1}, true));
    ReduceSpec r = spec(g);
    CHECK(anyOnline(r));
    CHECK(r.phases() == 1);
  }
  {
    // The exp is an output too: two phases.
    Graph g("exp_out");
    Value x = g.input("x", bf16, {16, 4096});
    Value e = exp(x - amax(x, {-1}, true));
    g.output(e);
    g.output(e / sum(e, {-1}, true));
    ReduceSpec r = spec(g);
    CHECK_FALSE(anyOnline(r));
    CHECK(r.phases() == 2);
  }
  {
    // exp(y - amax(x)) with y another tensor: two phases.
    Graph g("other");
    Value x = g.input("x", f32, {16, 4096}), y = g.input("y", f32, {16, 4096});
    Value e = exp(y - amax(x, {-1}, true));
    g.output(e / sum(e, {-1}, true));
    ReduceSpec r = spec(g);
    CHECK_FALSE(anyOnline(r));
    CHECK(r.phases() == 2);
  }
}

TEST_CASE("reduce specs: residual + RMSNorm is one kernel with two outputs; a column sum is "
          "strided",
          "[reduce][codegen]") {
  Graph g("add_rms");
  auto h = g.input("x", bf16, {8, 8192}) + g.input("r", bf16, {8, 8192});
  g.output(h);
  g.output(rms_norm(h, g.input("w", bf16, {8192})));
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
    // The CTA's share of the next row it takes (16384 elements) is staged in shared memory
    // by cp.async, in flight during this row's cluster barriers and stores.
    CHECK(r->stageBytes == 16384 * dtypeSize(t));
    CHECK(emitterFor(specs[0]).launch(specs[0], 132, 132 * 8).sharedBytes == r->stageBytes);
    std::string src = emitKernelSource(specs[0]);
    CHECK(src.find("__launch_bounds__(512, 2)") != std::string::npos);
    CHECK(src.find("extern __shared__ __align__(16) unsigned char rowstage[];") != std::string::npos);
    CHECK(src.find("const unsigned mc = m + (unsigned)gridDim.x / 8u;") != std::string::npos);
    CHECK(src.find(fmt::format("kf_cp_async<16>(kf_saddr(rowstage + 0u + q0 * {}u), in0 + ((mc) * "
                               "131072u) + n0);",
                               dtypeSize(t))) != std::string::npos);
    CHECK(src.find("kf_cp_wait_all();") < src.find("*reinterpret_cast<const uint4 *>(rowstage + 0u + q0"));
    CHECK(src.find("kf_prefetch_l2") == std::string::npos);
    // One cluster barrier per phase (two slots used by turns), and one before the CTA
    // leaves: softmax has 1 phase (amax and its online sum).
    CHECK(src.find("__shared__ float redc[2][2];") != std::string::npos);
    size_t barriers = 0;
    for (size_t at = src.find("kf_cluster_sync();"); at != std::string::npos;
         at = src.find("kf_cluster_sync();", at + 1))
      ++barriers;
    CHECK(barriers == 2);
  }
  {
    // bf16 rows read in vectors of 4 (the f32 output is the widest tensor): 8-byte copies.
    Graph g("softmax_long_f32_out");
    g.output(cast(softmax(g.input("x", bf16, {64, 131072})), f32));
    std::vector<KernelSpec> specs = fusedSpecs(g);
    REQUIRE(specs.size() == 1);
    const ReduceSpec *r = specs[0].reduce();
    REQUIRE(r);
    CHECK(r->vec == 4);
    REQUIRE(r->cluster > 1);
    CHECK(r->stageBytes == 131072 / r->cluster * 2);
    std::string src = emitKernelSource(specs[0]);
    CHECK(src.find("kf_cp_async<8>(kf_saddr(rowstage + 0u + q0 * 2u), in0 + ((mc) * 131072u) + n0);") !=
          std::string::npos);
    CHECK(src.find("*reinterpret_cast<uint2 *>(v0) = *reinterpret_cast<const uint2 *>(rowstage + 0u + q0 * 2u);") !=
          std::string::npos);
  }
  {
    // Rows one CTA holds: no cluster barriers to hide, no stage.
    Graph g("softmax_short");
    g.output(softmax(g.input("x", bf16, {64, 4096})));
    std::vector<KernelSpec> specs = fusedSpecs(g);
    REQUIRE(specs.size() == 1);
    REQUIRE(specs[0].reduce()->cluster == 1);
    CHECK(specs[0].reduce()->stageBytes == 0);
    CHECK(emitKernelSource(specs[0]).find("rowstage") == std::string::npos);
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

TEST_CASE("reduce specs: a row of at most 8 vectors per lane stays in one warp where its inputs "
          "fit the registers",
          "[reduce][codegen]") {
  auto spec = [](DType t, int64_t n, bool add) {
    Graph g("row");
    Value x = g.input("x", t, {64, n});
    if (add)
      x = x + g.input("r", t, {64, n});
    g.output(rms_norm(x, g.input("w", t, {n}), 1e-6));
    std::vector<KernelSpec> specs = fusedSpecs(g);
    REQUIRE(specs.size() == 1);
    REQUIRE(specs[0].reduce());
    return *specs[0].reduce();
  };
  ReduceSpec f = spec(f32, 1024, false); // 256 vectors of 4: 8 per lane of one warp
  CHECK(f.threads == 32);
  CHECK(f.steps == 8);
  CHECK(f.cache);
  Graph sm("softmax_1024");
  sm.output(softmax(sm.input("x", f32, {64, 1024})));
  std::vector<KernelSpec> sms = fusedSpecs(sm);
  REQUIRE(sms.size() == 1);
  CHECK(emitKernelSource(sms[0]).find("__syncthreads") == std::string::npos); // shuffles only
  ReduceSpec h = spec(bf16, 2048, false); // 256 vectors of 8: 64 values per lane
  CHECK(h.threads == 32);
  CHECK(h.cache);
  // Two inputs of 64 values per lane do not fit: two warps of 32 values each.
  ReduceSpec two = spec(bf16, 2048, true);
  CHECK(two.threads == 64);
  CHECK(two.steps == 4);
  CHECK(two.cache);
  // Longer rows keep about 4 vectors per lane.
  CHECK(spec(f32, 2048, false).threads == 128);
}

TEST_CASE("reduce specs: a variance about the row's mean is online (Chan's combine), in "
          "LayerNorm and var_mean",
          "[reduce][codegen]") {
  auto one = [](Graph &g) {
    std::vector<KernelSpec> specs = fusedSpecs(g);
    REQUIRE(specs.size() == 1);
    REQUIRE(specs[0].reduce());
    return specs[0];
  };
  auto partners = [](const KernelSpec &k) {
    std::vector<std::pair<OpKind, OpKind>> out; // (reduction, its partner)
    const ReduceSpec &r = *k.reduce();
    for (size_t i = 0; i < r.online.size(); ++i)
      if (r.online[i] >= 0)
        out.push_back({k.ops[i].kind, k.ops[static_cast<size_t>(r.online[i])].kind});
    return out;
  };
  using P = std::vector<std::pair<OpKind, OpKind>>;
  {
    Graph g("ln");
    Value x = g.input("x", f32, {16, 4096});
    g.output(layer_norm(x, g.input("w", f32, {4096}), g.input("b", f32, {4096}), 1e-5));
    KernelSpec k = one(g);
    CHECK(k.reduce()->phases() == 1);
    CHECK(partners(k) == P{{OpKind::Mean, OpKind::Mean}});
    std::string src = emitKernelSource(k);
    CHECK(src.find("kf_warp_welford<32>(n") != std::string::npos);
    CHECK(src.find("kf_welford_add(n") != std::string::npos);
    CHECK(std::regex_search(src, std::regex(R"(a[0-9]+ \+= \(e0 - u[0-9]+\) \* \(e0 - u[0-9]+\);)")));
  }
  for (DType t : {f32, bf16}) {
    Graph g("vm");
    auto [var, mean] = var_mean(g.input("x", t, {16, 4096}), {-1}, 1.0, true);
    g.output(var);
    g.output(mean);
    KernelSpec k = one(g);
    CHECK(k.reduce()->phases() == 1);
    CHECK(partners(k) == P{{OpKind::Sum, OpKind::Mean}});
  }
  {
    // (y - mean(x))^2: not a variance of x.
    Graph g("other");
    Value x = g.input("x", f32, {16, 4096}), y = g.input("y", f32, {16, 4096});
    Value d = y - mean(x, {-1}, true);
    g.output(sum(d * d, {-1}, true));
    KernelSpec k = one(g);
    CHECK(partners(k).empty());
    CHECK(k.reduce()->phases() == 2);
  }
}
