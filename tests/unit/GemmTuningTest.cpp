// The autotuner's search space without a GPU: every candidate configuration of a GEMM
// problem is valid (shared memory, K split, partial sums), distinct, led by the heuristic's
// choice, and compiles with NVRTC; a tuning picks its candidate when kernel specs are built
// and is ignored when it names no candidate.
#include "codegen/CudaCodegen.h"
#include "codegen/GemmTuning.h"
#include "ir/Builder.h"
#include "passes/Fusion.h"
#include "compiler/Nvrtc.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <set>

using namespace kfuse;
using namespace kfuse::codegen;

static std::unique_ptr<Graph> mbr(DType t, int64_t M, int64_t N, int64_t K, bool tb = false) {
  auto g = std::make_unique<Graph>("mbr");
  Value a = g->input("a", t, {M, K});
  Value b = g->input("b", t, tb ? Shape{N, K} : Shape{K, N});
  g->output(relu(matmul(a, b, {false, tb}) + g->input("bias", t, {N})));
  fuseGraph(*g);
  return g;
}

static GemmSpec heuristic(const Graph &g, const Target &t) {
  auto specs = buildKernelSpecs(g, t);
  REQUIRE(specs.size() == 1);
  REQUIRE(specs[0].gemm());
  return *specs[0].gemm();
}

TEST_CASE("GEMM candidates: valid, distinct, the heuristic's first", "[codegen][gemm][tune]") {
  Target h100 = targetFor(90, 132), a100 = targetFor(80, 108);
  struct P {
    int64_t M, N, K;
    GemmKernel kind;
    Target t;
  };
  for (const P &p : std::vector<P>{{1, 8192, 8192, GemmKernel::Decode, h100},
                                   {16, 8192, 8192, GemmKernel::Decode, h100},
                                   {4, 1000, 72, GemmKernel::Decode, h100},
                                   {16, 8192, 8192, GemmKernel::Decode, a100},
                                   {4096, 4096, 4096, GemmKernel::Wgmma, h100},
                                   {64, 11008, 4096, GemmKernel::Wgmma, h100},
                                   {4096, 4096, 4096, GemmKernel::TensorCore, a100}}) {
    auto g = mbr(bf16, p.M, p.N, p.K);
    GemmSpec h = heuristic(*g, p.t);
    INFO("M=" << p.M << " N=" << p.N << " K=" << p.K << " sm_" << p.t.sm);
    REQUIRE(h.kernel == p.kind);
    std::vector<GemmSpec> c = gemmCandidates(h, p.t);
    CHECK(c.size() >= 4);
    CHECK(c[0].describe() == h.describe());
    std::set<std::string> seen;
    unsigned pingpong = 0, clustered = 0;
    for (const GemmSpec &s : c) {
      INFO(s.describe());
      CHECK(seen.insert(s.describe()).second);
      CHECK(s.kernel == p.kind);
      CHECK(s.sharedBytes() <= p.t.sharedPerBlock());
      CHECK(gemmProblemKey(s, p.t) == gemmProblemKey(h, p.t));
      if (s.kernel == GemmKernel::Decode) {
        CHECK((s.ks == 1 || p.t.sm >= 90));
        CHECK(s.ks <= 8);
        CHECK(size_t(s.warpsN) * s.M * s.bn * 4 <= s.sharedBytes()); // partial sums fit
        CHECK(128 % (16 * s.warpsN) == 0);
      }
      if (s.kernel == GemmKernel::Wgmma) {
        CHECK(s.bm == 64 * s.warpsM);
        CHECK((s.warpsM == 1 || p.M > 64));
        CHECK(s.ctas >= 1);
        CHECK(s.ctas <= p.t.smCount);
        if (s.pingpong) { // both halves' accumulators in one consumer: 128 columns
          ++pingpong;
          CHECK(s.warpsM == 2);
          CHECK(s.bn == 128);
          CHECK(s.describe().find("in ping-pong") != std::string::npos);
        }
        if (s.cluster > 1) { // pairs of 128-row tiles, whole clusters in the grid
          ++clustered;
          CHECK(s.cluster == 2);
          CHECK(s.warpsM == 2);
          CHECK(s.ctas % 2 == 0);
          CHECK(s.describe().find("in 2-CTA clusters sharing B") != std::string::npos);
        }
      }
    }
    if (p.kind == GemmKernel::Wgmma) { // two consumers are needed to take tiles in turn,
      CHECK((pingpong > 0) == (p.M > 64)); // two M-tiles to share B
      CHECK((clustered > 0) == (p.M > 128));
    }
    if (p.kind == GemmKernel::Decode && p.t.sm == 90 && p.K == 8192) {
      // K splits of 1, 2, 4 and 8 CTAs, 64 and 128 columns all appear.
      std::set<unsigned> ks, bn;
      for (const GemmSpec &s : c) {
        ks.insert(s.ks);
        bn.insert(s.bn);
      }
      CHECK(ks == std::set<unsigned>{1, 2, 4, 8});
      CHECK(bn == std::set<unsigned>{64, 128});
    }
  }
  GemmSpec h = heuristic(*mbr(bf16, 4096, 4096, 4096), h100);
  CHECK_THROWS_WITH(configureWgmma(h, h100, 1, 128, 4, true), Catch::Contains("ping-pong"));
  CHECK_THROWS_WITH(configureWgmma(h, h100, 2, 256, 4, true), Catch::Contains("ping-pong"));
  configureWgmma(h, h100, 2, 128, 6, true);
  auto specs = buildKernelSpecs(*mbr(bf16, 4096, 4096, 4096), h100);
  CHECK(emitProgram(specs).find("2, 256, 4, 1, false, ") != std::string::npos); // cooperative
  specs[0].kind = h;
  CHECK(emitProgram(specs).find("kf_gemm_wg<2, 4096, 4096, 4096, false, false, 2, 128, 6, 1, "
                                "true, ") != std::string::npos);
  // 2-CTA clusters: the attribute, CL = 2, half of B per CTA ([N, K]: BN / 2 rows per box),
  // a grid of whole clusters (4096^3: 16 x 16 pairs of 128x256 tiles, 66 clusters).
  GemmSpec cl = heuristic(*mbr(bf16, 4096, 4096, 4096, true), h100);
  configureWgmma(cl, h100, 2, 256, 4, false, 2);
  CHECK(cl.ctas == 132);
  CHECK(cl.tmaB.box[1] == 128);
  CHECK(cl.tmaA.box[1] == 128);
  auto clSpecs = buildKernelSpecs(*mbr(bf16, 4096, 4096, 4096, true), h100);
  clSpecs[0].kind = cl;
  std::string clSrc = emitProgram(clSpecs);
  CHECK(clSrc.find("__launch_bounds__(384, 1) __cluster_dims__(2, 1, 1)") != std::string::npos);
  CHECK(clSrc.find("kf_gemm_wg<2, 4096, 4096, 4096, false, true, 2, 256, 4, 1, false, 2, ") !=
        std::string::npos);
  CHECK(emitProgram(specs).find("__cluster_dims__") == std::string::npos);
  CHECK_THROWS_WITH(configureWgmma(cl, h100, 2, 256, 4, false, 4), Catch::Contains("cluster"));
  // An odd number of work units caps the grid at whole clusters: 300 rows are 3 M-tiles
  // (2 pairs), 500 columns 4 N-tiles of 128: 8 units, 16 CTAs.
  GemmSpec odd = heuristic(*mbr(bf16, 300, 500, 264), h100);
  configureWgmma(odd, h100, 2, 128, 4, false, 2);
  CHECK(odd.ctas == 16);
  // One configuration only: nothing to tune.
  auto f32g = mbr(f32, 300, 200, 72);
  CHECK(gemmCandidates(heuristic(*f32g, h100), h100).size() == 1);
}

TEST_CASE("GEMM problem keys tell problems and targets apart", "[codegen][gemm][tune]") {
  Target h100 = targetFor(90, 132), portable = targetFor(90, 132, false), small = targetFor(90, 114);
  // Same SMs, but the device holds only 60 of the 66 2-CTA clusters (the clustered grid is
  // sized by that, so a tuning made on one must not be reused on the other).
  Target fewerPairs = targetFor(90, 132, true, 60), measuredAll = targetFor(90, 132, true, 66);
  GemmSpec a = heuristic(*mbr(bf16, 4096, 4096, 4096), h100);
  GemmSpec b = heuristic(*mbr(bf16, 4096, 4096, 4096, true), h100);
  GemmSpec c = heuristic(*mbr(f16, 4096, 4096, 4096), h100);
  CHECK(gemmProblemKey(a, h100) == "bf16 NN M=4096 N=4096 K=4096 batch=[] A=[] B=[] on sm_90a x132 pairs=66");
  CHECK(gemmProblemKey(b, h100) != gemmProblemKey(a, h100));
  CHECK(gemmProblemKey(c, h100) != gemmProblemKey(a, h100));
  CHECK(gemmProblemKey(a, portable) != gemmProblemKey(a, h100));
  CHECK(gemmProblemKey(a, small) != gemmProblemKey(a, h100));
  CHECK(gemmProblemKey(a, fewerPairs) != gemmProblemKey(a, h100));
  CHECK(gemmProblemKey(a, measuredAll) == gemmProblemKey(a, h100));
}

TEST_CASE("a GEMM tuning picks its candidate when specs are built", "[codegen][gemm][tune]") {
  Target h100 = targetFor(90, 132);
  auto g = mbr(bf16, 16, 8192, 8192);
  GemmSpec h = heuristic(*g, h100);
  std::vector<GemmSpec> c = gemmCandidates(h, h100);
  REQUIRE(c.size() > 3);
  GemmTuning tuning;
  tuning.byProblem[gemmProblemKey(h, h100)] = {c[3].describe(), "autotuned: 1.0 us"};
  auto tuned = buildKernelSpecs(*g, h100, &tuning);
  REQUIRE(tuned[0].gemm());
  CHECK(tuned[0].gemm()->describe() == c[3].describe());
  CHECK(tuned[0].gemm()->why == "autotuned: 1.0 us");
  CHECK(tuned[0].launchConfig(256, 1000).gridY == c[3].ks);
  // A choice that is no candidate (another kfuse's) leaves the heuristic's.
  tuning.byProblem.begin()->second.config = "decode 1x1x1 from elsewhere";
  CHECK(buildKernelSpecs(*g, h100, &tuning)[0].gemm()->describe() == h.describe());
  // Another problem's choice does not apply.
  GemmTuning other;
  other.byProblem[gemmProblemKey(heuristic(*mbr(bf16, 16, 4096, 8192), h100), h100)] = {
      c[3].describe(), "x"};
  CHECK(buildKernelSpecs(*g, h100, &other)[0].gemm()->describe() == h.describe());
}

/// NVRTC compiles every autotune candidate of one problem (those whose index is `half`
/// modulo `halves`), as one program, as the autotuner compiles them. Here only whether each
/// compiles is asked, so NVVM and ptxas run with `CheckOnly` (a decode problem's candidates
/// take 6 s instead of 12 s, in two test cases that ctest runs in parallel); the GPU suite
/// (AutotuneGpuTest) compiles every candidate optimized and runs it.
static void compileCandidates(int64_t M, int64_t N, int64_t K, bool tb, size_t half = 0,
                              size_t halves = 1) {
  Target h100 = targetFor(90, 132);
  auto g = mbr(bf16, M, N, K, tb);
  auto specs = buildKernelSpecs(*g, h100);
  std::vector<GemmSpec> c = gemmCandidates(*specs[0].gemm(), h100);
  std::vector<KernelSpec> all;
  for (size_t i = half; i < c.size(); i += halves) {
    KernelSpec k = specs[0];
    k.kind = c[i];
    k.index = static_cast<unsigned>(i);
    k.mangled = fmt::format("{}_cand{}", specs[0].mangled, i);
    all.push_back(k);
  }
  compiler::CompiledProgram p = compiler::nvrtcCompile(emitProgram(all), compileArch(h100), true,
                                                         compiler::CompileEffort::CheckOnly);
  INFO("M=" << M << ": " << all.size() << " of " << c.size() << " candidates");
  for (const KernelSpec &k : all)
    CHECK(p.ptx.find(".entry " + k.mangled) != std::string::npos);
}

// Decode problems: both layouts, every split.
TEST_CASE("NVRTC compiles every autotune candidate: decode, [K, N] weights, even",
          "[nvrtc][gemm][tune]") {
  compileCandidates(3, 1000, 1024, false, 0, 2);
}

TEST_CASE("NVRTC compiles every autotune candidate: decode, [K, N] weights, odd",
          "[nvrtc][gemm][tune]") {
  compileCandidates(3, 1000, 1024, false, 1, 2);
}

TEST_CASE("NVRTC compiles every autotune candidate: decode, [N, K] weights, even",
          "[nvrtc][gemm][tune]") {
  compileCandidates(16, 1000, 1024, true, 0, 2);
}

TEST_CASE("NVRTC compiles every autotune candidate: decode, [N, K] weights, odd",
          "[nvrtc][gemm][tune]") {
  compileCandidates(16, 1000, 1024, true, 1, 2);
}

TEST_CASE("NVRTC compiles every autotune candidate: Hopper tiles", "[nvrtc][gemm][tune]") {
  compileCandidates(300, 500, 264, false);
}
