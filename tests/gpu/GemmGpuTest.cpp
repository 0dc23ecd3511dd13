// Generated GEMM kernels (tensor-core, f32 FFMA, small-M gemv and tensor-core decode) with
// fused epilogues on a real GPU against float64 references: the interpreter on random
// shapes (M = 1, 3, 127, 4097, N and K off the tiles, transposes, broadcast batches,
// bias/residual epilogues, every dtype), the decode kernel for M = 1..16 with its cluster
// K split, a CUDA graph replay, and every example graph (sampled elements evaluated point
// by point in float64 where the graph is too big for the interpreter).
#include "GemmHarness.h"

#include "codegen/DecodeGemm.h"
#include "codegen/GemmTuning.h"
#include "codegen/KernelSpec.h"
#include "ir/Builder.h"
#include "ir/Compare.h"
#include "ir/Error.h"
#include "ir/Interpreter.h"
#include "ir/Parser.h"
#include "passes/Fusion.h"
#include "passes/PassManager.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>

using namespace kfuse;
using namespace kfuse::gputest;
using runtime::Driver;


TEST_CASE("GEMM: random shapes, transposes, dtypes and epilogues against the interpreter",
          "[gpu][gemm]") {
  std::mt19937_64 rng(2026);
  struct Case {
    int64_t M, N, K;
  };
  std::vector<Case> cases = {{1, 8197, 8192}, {1, 77, 45},     {3, 130, 264},     {3, 33, 7},
                             {16, 515, 1000}, {17, 65, 129},   {127, 257, 96},    {127, 67, 33},
                             {4097, 67, 45},  {4097, 136, 64}, {1537, 1600, 136}, {200, 8, 16},
                             {64, 72, 0},     {0, 64, 32}};
  int run = 0;
  for (const Case &c : cases)
    for (DType t : {DType::F32, DType::F16, DType::BF16}) {
      MatMulAttrs attrs{bool(rng() & 1), bool(rng() & 1)};
      if (c.M == 1 && c.N == 8197)
        attrs = {false, run % 2 == 0}; // both gemv layouts on the big decode shape
      Epi epi = static_cast<Epi>(rng() % 6);
      Shape sa = attrs.transA ? Shape{c.K, c.M} : Shape{c.M, c.K};
      Shape sb = attrs.transB ? Shape{c.N, c.K} : Shape{c.K, c.N};
      auto g = gemmGraph(t, sa, sb, attrs, epi);
      RunResult r = runOnGpu(*g, 100 + run++);
      REQUIRE(r.specs.size() == 1);
      REQUIRE(r.specs[0].gemm());
      INFO(dtypeName(t) << " M=" << c.M << " N=" << c.N << " K=" << c.K
                        << " transA=" << attrs.transA << " transB=" << attrs.transB << " epilogue="
                        << epiName(epi) << " kernel " << r.specs[0].gemm()->describe());
      CHECK(checkWithInterpreter(*g, r) == "");
    }
}

TEST_CASE("GEMM: the decode kernel (M <= 16, f16/bf16) on odd shapes, both layouts of B",
          "[gpu][gemm][decode]") {
  // Shapes by what they exercise: N=200, K=1000: 16-byte copies (both layouts), 8 k tiles,
  // a K split over an 8-CTA cluster on sm_90; N=77, K=9: scalar loads for A and B in every
  // layout, one k tile, no split; N=520, K=4104: 33 k tiles over a 7-CTA cluster (the last
  // rank gets 3 of 5), N off the 64-column tile.
  struct Shape2 {
    int64_t N, K;
  };
  std::vector<Shape2> shapes = {{200, 1000}, {77, 9}, {520, 4104}};
  Driver &d = Driver::require();
  int run = 0;
  for (int64_t M : {1, 2, 3, 7, 8, 15, 16})
    for (size_t si = 0; si < shapes.size(); ++si)
      for (bool tb : {false, true})
        for (int ti = 0; ti < 2; ++ti) {
          DType t = ti == 0 ? DType::F16 : DType::BF16;
          // trans_a follows the dtype and the epilogue follows trans_b, both flipping with
          // M + shape: every pair of each appears.
          bool ta = (M + int64_t(si) + ti) % 2 == 1;
          Epi epi = (M + int64_t(si) + tb) % 2 == 0 ? Epi::BiasRelu : Epi::ResidualGelu;
          int64_t N = shapes[si].N, K = shapes[si].K;
          Shape sa = ta ? Shape{K, M} : Shape{M, K};
          Shape sb = tb ? Shape{N, K} : Shape{K, N};
          auto g = gemmGraph(t, sa, sb, {ta, tb}, epi);
          RunResult r = runOnGpu(*g, 3000 + run++);
          REQUIRE(r.specs.size() == 1);
          REQUIRE(r.specs[0].gemm());
          INFO(dtypeName(t) << " M=" << M << " N=" << N << " K=" << K << " transA=" << ta
                            << " transB=" << tb << " epilogue=" << epiName(epi) << " kernel "
                            << r.specs[0].gemm()->describe());
          if (d.ccMajor >= 8)
            CHECK(r.specs[0].gemm()->kernel == codegen::GemmKernel::Decode);
          CHECK(checkWithInterpreter(*g, r) == "");
        }
}

TEST_CASE("GEMM: the decode kernel on the benchmark shapes and batched (clusters along K)",
          "[gpu][gemm][decode]") {
  Driver &d = Driver::require();
  int run = 0;
  // [1 or 16, 8192] x [8192, 8192] + bias + relu (on sm_90 B by TMA, one CTA per SM and
  // no K split for 128 column tiles on 132 SMs), sampled.
  for (int64_t M : {1, 16})
    for (bool tb : {false, true}) {
      int64_t N = 8192, K = 8192;
      auto g = gemmGraph(DType::BF16, {M, K}, tb ? Shape{N, K} : Shape{K, N}, {false, tb},
                         Epi::BiasRelu);
      RunResult r = runOnGpu(*g, 4000 + run++);
      REQUIRE(r.specs[0].gemm());
      INFO("M=" << M << " transB=" << tb << " " << r.specs[0].gemm()->describe());
      if (d.ccMajor >= 9)
        CHECK(r.specs[0].gemm()->tensorMaps() == 1);
      CHECK(checkSampled(*g, r, 2000, 4100 + run) == "");
    }
  // A model layer whose column tiles outnumber the CTAs the device holds: on 132 SMs of
  // sm_90 Gemma-7B's gate_proj 3072 -> 24576 (384 tiles of 12 k tiles, dividing evenly
  // enough that stream-K gains nothing) takes a persistent grid of 132 CTAs, each taking 2-3
  // tiles with its ring streaming on. + bias + relu, both layouts, sampled. (The stream-K
  // grid's layers: DecodeStreamKGpuTest.)
  struct Layer {
    int64_t N, K;
  };
  for (Layer l : {Layer{24576, 3072}})
    for (int64_t M : {1, 16})
      for (bool tb : {false, true}) {
        auto g = gemmGraph(DType::BF16, {M, l.K}, tb ? Shape{l.N, l.K} : Shape{l.K, l.N},
                           {false, tb}, Epi::BiasRelu);
        RunResult r = runOnGpu(*g, 4300 + run++);
        REQUIRE(r.specs[0].gemm());
        const codegen::GemmSpec &s = *r.specs[0].gemm();
        INFO("M=" << M << " N=" << l.N << " K=" << l.K << " transB=" << tb << " " << s.describe());
        if (d.ccMajor == 9 && d.smCount == 132)
          CHECK((codegen::decodeLoops(s) && !s.streamK));
        CHECK(checkSampled(*g, r, 2000, 4400 + run) == "");
      }
  // Batches on grid z beside the cluster on y: a [2,1,M,K] x b [3,K,N] (or [3,N,K]) with a
  // residual epilogue, and a broadcast bias.
  for (int64_t M : {3, 16})
    for (bool tb : {false, true}) {
      int64_t N = 200, K = 1000;
      auto g = gemmGraph(DType::BF16, {2, 1, M, K}, tb ? Shape{3, N, K} : Shape{3, K, N},
                         {false, tb}, M == 3 ? Epi::ResidualGelu : Epi::BiasRelu);
      RunResult r = runOnGpu(*g, 4200 + run++);
      REQUIRE(r.specs[0].gemm());
      INFO("batched M=" << M << " transB=" << tb << " " << r.specs[0].gemm()->describe());
      if (d.ccMajor >= 8)
        CHECK(r.specs[0].gemm()->kernel == codegen::GemmKernel::Decode);
      CHECK(checkWithInterpreter(*g, r) == "");
    }
}

TEST_CASE("GEMM: every kernel on one problem per dtype and transpose pair", "[gpu][gemm]") {
  // Shapes that select each kernel: M=5 (gemv), M=300 (wgmma, tensor core or FFMA); K % 8
  // != 0 takes the scalar loads, K % 8 == 0 the 16-byte ones; each also with portable
  // kernels only (mma.sync where sm_90a would take wgmma).
  int run = 0;
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (int tr = 0; tr < 4; ++tr)
      for (int64_t M : {int64_t(5), int64_t(300)})
        for (int64_t K : {int64_t(61), int64_t(72)})
          for (bool archSpecific : {true, false}) {
            MatMulAttrs attrs{bool(tr & 1), bool(tr & 2)};
            int64_t N = 203;
            Shape sa = attrs.transA ? Shape{K, M} : Shape{M, K};
            Shape sb = attrs.transB ? Shape{N, K} : Shape{K, N};
            auto g = gemmGraph(t, sa, sb, attrs, Epi::BiasRelu);
            RunResult r = runOnGpu(*g, 500 + run++, false, archSpecific);
            REQUIRE(r.specs[0].gemm());
            INFO(dtypeName(t) << " M=" << M << " K=" << K << " transA=" << attrs.transA
                              << " transB=" << attrs.transB << " " << r.specs[0].gemm()->describe());
            CHECK(checkWithInterpreter(*g, r) == "");
          }
}

// f32 with TF32 allowed: inputs rounded to a 10-bit mantissa (relative error <= 2^-11 each,
// 2^-10 where wgmma truncates), products summed in f32. With inputs uniform in [-2, 2) the
// error of a dot product of K terms has a standard deviation of about 2^-11 x 1.09 x sqrt(K)
// (twice that truncated): each element must be within 2^-7 sqrt(K) (about 7-15 of those) +
// 2^-10 |ref| of the float64 reference. "" when all are, else the first that is not;
// `exactMisses` counts the elements off the exact f32 bound (the kernel really rounded).
std::string tf32Mismatch(const Graph &g, const RunResult &r, int64_t K, int64_t &exactMisses) {
  std::vector<Tensor> ref = referenceOf(g, r);
  exactMisses = 0;
  for (size_t j = 0; j < ref.size(); ++j)
    for (int64_t i = 0; i < ref[j].numElements(); ++i) {
      const double got = r.outputs[j].at(i), want = ref[j].data[i];
      const double tol = 0x1p-10 * std::fabs(want) + 0x1p-7 * std::sqrt(double(K)) + 1e-4;
      if (std::isnan(got) != std::isnan(want) || std::fabs(got - want) > tol)
        return fmt::format("output {} element {}: got {} where the reference is {} (TF32 "
                           "tolerance {})",
                           j, i, got, want, tol);
      exactMisses += !checkClose(DType::F32, got, want, K, i).empty();
    }
  return "";
}

TEST_CASE("GEMM: f32 on TF32 tensor cores where allowed, every layout and tile edge",
          "[gpu][gemm][tf32]") {
  Driver &d = Driver::require();
  if (d.ccMajor < 8) {
    WARN("TF32 mma.sync needs compute capability 8.0; this device is " << d.arch());
    return;
  }
  struct Case {
    int64_t M, N, K;
  };
  // 300 x 203 x 61: scalar loads (K % 4 != 0), edge tiles both ways; 1536^2 x 256: 144
  // 128x128 tiles (the big tile); 4097 x 136 x 64: one row past 32 tiles; 64 x 64 x 4100: K
  // far past the tile with a partial last stage; 17 x 1000 x 33: M just above gemv's 16.
  std::vector<Case> cases = {{300, 203, 61}, {1536, 1536, 256}, {4097, 136, 64}, {64, 64, 4100},
                             {17, 1000, 33}};
  int run = 0;
  for (const Case &c : cases)
    for (int tr = 0; tr < 4; ++tr) {
      MatMulAttrs attrs{bool(tr & 1), bool(tr & 2)};
      Epi epi = (run % 2) ? Epi::ResidualGelu : Epi::BiasRelu;
      Shape sa = attrs.transA ? Shape{c.K, c.M} : Shape{c.M, c.K};
      Shape sb = attrs.transB ? Shape{c.N, c.K} : Shape{c.K, c.N};
      auto g = gemmGraph(DType::F32, sa, sb, attrs, epi);
      RunResult r = runOnGpu(*g, 7000 + run++, false, true, nullptr, true);
      REQUIRE(r.specs.size() == 1);
      REQUIRE(r.specs[0].gemm());
      const codegen::GemmSpec &s = *r.specs[0].gemm();
      INFO("M=" << c.M << " N=" << c.N << " K=" << c.K << " transA=" << attrs.transA
                << " transB=" << attrs.transB << " epilogue=" << epiName(epi) << " kernel "
                << s.describe());
      CHECK(s.tf32());
      // sm_90a: K-major A and B (trans_b) with 16-byte rows take wgmma, the rest mma.sync.
      const bool wg = d.ccMajor == 9 && d.ccMinor == 0 && !attrs.transA && attrs.transB &&
                      c.K % 4 == 0;
      CHECK(s.kernel == (wg ? codegen::GemmKernel::Wgmma : codegen::GemmKernel::TensorCore));
      if (!wg)
        CHECK(s.bm == (c.M == 1536 ? 128u : 64u));
      int64_t exactMisses = 0;
      CHECK(tf32Mismatch(*g, r, c.K, exactMisses) == "");
      if (c.K >= 32)
        CHECK(exactMisses > 0);
    }
  // Not allowed (the default), the same f32 problem stays exact: FFMA tiles.
  auto g = gemmGraph(DType::F32, {300, 61}, {61, 203}, {}, Epi::BiasRelu);
  RunResult r = runOnGpu(*g, 7100);
  CHECK(r.specs[0].gemm()->kernel == codegen::GemmKernel::Simt);
  CHECK(checkWithInterpreter(*g, r) == "");
}

// TF32 on every wgmma configuration of 4 stages (tiles, 2-CTA clusters, ping-pong): 1800 x
// 2600 x 200 (15 x 21 128-row x 128-column tiles, both edges partial; 7 k steps of 32 with
// a partial one), A [M, K] and B [N, K].
TEST_CASE("GEMM: TF32 wgmma, every 4-stage configuration", "[gpu][gemm][tf32][wgmma]") {
  Driver &d = Driver::require();
  if (!wgmmaDevice(d))
    return;
  const Target t = runtime::deviceTarget(d);
  const int64_t M = 1800, N = 2600, K = 200;
  auto g = gemmGraph(DType::F32, {M, K}, {N, K}, {false, true}, Epi::BiasRelu);
  auto specs = codegen::buildKernelSpecs(*g, t, nullptr, /*allowTf32=*/true);
  REQUIRE(specs.size() == 1);
  REQUIRE(specs[0].gemm());
  REQUIRE(specs[0].gemm()->kernel == codegen::GemmKernel::Wgmma);
  int tried = 0;
  for (const codegen::GemmSpec &c : codegen::gemmCandidates(*specs[0].gemm(), t)) {
    if (c.stages != 4)
      continue;
    codegen::GemmTuning tuning;
    tuning.byProblem[codegen::gemmProblemKey(*specs[0].gemm(), t)] = {c.describe(), "test"};
    RunResult r = runOnGpu(*g, 7200 + tried++, false, true, &tuning, true);
    INFO(r.specs[0].gemm()->describe());
    CHECK(r.specs[0].gemm()->describe() == c.describe());
    int64_t exactMisses = 0;
    CHECK(tf32Mismatch(*g, r, K, exactMisses) == "");
    CHECK(exactMisses > 0);
  }
  CHECK(tried >= 6);
}

TEST_CASE("GEMM: the sm_90a wgmma kernel on every layout, tile edges and epilogues",
          "[gpu][gemm][wgmma]") {
  Driver &d = Driver::require();
  if (!wgmmaDevice(d))
    return;
  struct Case {
    int64_t M, N, K;
  };
  // Rows of 8-element multiples (TMA: M too, for A^T stored [K,M]), otherwise off every
  // tile: M/N/K below, at and past 64/128/256 and BK = 64, K from one k16 step to many
  // rounds of the stage ring.
  std::vector<Case> cases = {{304, 200, 72},  {24, 8, 8},      {64, 136, 1000},  {72, 264, 16},
                             {136, 520, 200}, {1000, 256, 64}, {256, 1024, 4096}};
  int run = 0;
  for (const Case &c : cases)
    for (int tr = 0; tr < 4; ++tr) {
      DType t = run % 2 ? DType::F16 : DType::BF16;
      MatMulAttrs attrs{bool(tr & 1), bool(tr & 2)};
      Epi epi = static_cast<Epi>(run % 6);
      Shape sa = attrs.transA ? Shape{c.K, c.M} : Shape{c.M, c.K};
      Shape sb = attrs.transB ? Shape{c.N, c.K} : Shape{c.K, c.N};
      auto g = gemmGraph(t, sa, sb, attrs, epi);
      RunResult r = runOnGpu(*g, 700 + run++);
      REQUIRE(r.specs[0].gemm());
      INFO(dtypeName(t) << " M=" << c.M << " N=" << c.N << " K=" << c.K
                        << " transA=" << attrs.transA << " transB=" << attrs.transB << " epilogue="
                        << epiName(epi) << " kernel " << r.specs[0].gemm()->describe());
      CHECK(r.specs[0].gemm()->kernel == codegen::GemmKernel::Wgmma);
      CHECK(checkWithInterpreter(*g, r) == "");
    }
  // B as [N, K] leaves N free: odd N and N past a 64-column epilogue chunk by 1..7, where
  // the staged epilogue stores the row ends element by element.
  for (Case c : std::vector<Case>{{200, 77, 64}, {136, 261, 136}, {72, 1, 24}})
    for (int ta = 0; ta < 2; ++ta) {
      DType t = run % 2 ? DType::F16 : DType::BF16;
      MatMulAttrs attrs{bool(ta), true};
      Epi epi = static_cast<Epi>(run % 6);
      auto g = gemmGraph(t, ta ? Shape{c.K, c.M} : Shape{c.M, c.K}, Shape{c.N, c.K}, attrs, epi);
      RunResult r = runOnGpu(*g, 700 + run++);
      REQUIRE(r.specs[0].gemm());
      INFO(dtypeName(t) << " M=" << c.M << " N=" << c.N << " K=" << c.K << " transA=" << ta
                        << " epilogue=" << epiName(epi) << " " << r.specs[0].gemm()->describe());
      CHECK(r.specs[0].gemm()->kernel == codegen::GemmKernel::Wgmma);
      CHECK(checkWithInterpreter(*g, r) == "");
    }
  // Batched, A broadcast over B's batches, both as a CUDA graph.
  auto g = std::make_unique<Graph>("wgBatched");
  Value a = g->input("a", DType::BF16, {2, 1, 100, 64});
  Value b = g->input("b", DType::BF16, {3, 64, 136});
  g->output(relu(matmul(a, b) + g->input("bias", DType::BF16, {136})));
  fuseGraph(*g);
  RunResult r = runOnGpu(*g, 799, true);
  INFO(r.specs[0].gemm()->describe());
  CHECK(r.specs[0].gemm()->kernel == codegen::GemmKernel::Wgmma);
  CHECK(checkWithInterpreter(*g, r) == "");
}

// One wgmma candidate (an autotune one, picked by `pick`) on 1800 x 2600 x K, every layout,
// the staged one-output epilogue and the two-output one: 15 x 21 tiles of 128 x 128 (both
// edges partial) for 132 CTAs, so each CTA takes 2-3 tiles.
static void checkWgmmaCandidate(int64_t K, uint64_t seed,
                                const std::function<bool(const codegen::GemmSpec &)> &pick) {
  Driver &d = Driver::require();
  const Target t = runtime::deviceTarget(d);
  const int64_t M = 1800, N = 2600;
  for (int tr = 0; tr < 4; ++tr) {
    const bool twoOutputs = tr % 2 == 1;
    const DType dt = tr < 2 ? DType::BF16 : DType::F16;
    MatMulAttrs attrs{bool(tr & 1), bool(tr & 2)};
    auto g = std::make_unique<Graph>("candidate");
    Value a = g->input("a", dt, attrs.transA ? Shape{K, M} : Shape{M, K});
    Value b = g->input("b", dt, attrs.transB ? Shape{N, K} : Shape{K, N});
    Value h = matmul(a, b, attrs);
    Value bias = g->input("bias", dt, {N});
    if (twoOutputs) {
      g->output(h);
      g->output(tanh(h + bias));
    } else {
      g->output(relu(h + bias));
    }
    fuseGraph(*g);
    auto specs = codegen::buildKernelSpecs(*g, t);
    REQUIRE(specs.size() == 1);
    REQUIRE(specs[0].gemm());
    REQUIRE(specs[0].gemm()->kernel == codegen::GemmKernel::Wgmma);
    codegen::GemmTuning tuning;
    for (const codegen::GemmSpec &c : codegen::gemmCandidates(*specs[0].gemm(), t))
      if (pick(c))
        tuning.byProblem[codegen::gemmProblemKey(*specs[0].gemm(), t)] = {c.describe(), "test"};
    REQUIRE(tuning.byProblem.size() == 1);
    RunResult r = runOnGpu(*g, seed + tr, false, true, &tuning);
    INFO(dtypeName(dt) << " transA=" << attrs.transA << " transB=" << attrs.transB
                       << " outputs=" << g->outputs().size() << " "
                       << r.specs[0].gemm()->describe());
    const codegen::GemmSpec &s = *r.specs[0].gemm();
    REQUIRE(pick(s));
    // Every SM busy, in whole clusters: units of `cluster` M-adjacent tiles.
    const unsigned units = unsigned((M + s.bm * s.cluster - 1) / (s.bm * s.cluster) * ((N + s.bn - 1) / s.bn));
    CHECK(s.ctas == s.cluster * std::min(units, s.cluster == 1 ? t.smCount : t.pairs()));
    if (!twoOutputs) {
      CHECK(checkWithInterpreter(*g, r) == "");
      continue;
    }
    // h against the interpreter; tanh(h + bias) from the h the kernel stored (which its
    // epilogue reads back rounded): where the f32 and float64 sums round h to neighbouring
    // steps (4.7M elements hit that), tanh moves by tanh' x one step of h, more than one
    // step of its own, so the interpreter's tanh is no oracle for that element.
    CHECK(checkWithInterpreter(*g, r, 1) == "");
    std::string bad;
    for (int64_t i = 0; i < M * N && bad.empty(); ++i)
      bad = checkClose(dt, r.outputs[1].at(i),
                       std::tanh(r.outputs[0].at(i) + r.inputs[2].at(i % N)), 0, i);
    CHECK(bad == "");
  }
}

// The ping-pong configuration: both consumers run tiles in turn and one of them has a tile
// more; K = 72 is one full and one partial k step.
TEST_CASE("GEMM: the wgmma ping-pong kernel, several tiles per CTA, every layout",
          "[gpu][gemm][wgmma][pingpong]") {
  if (!wgmmaDevice(Driver::require()))
    return;
  checkWgmmaCandidate(72, 900, [](const codegen::GemmSpec &c) {
    return c.pingpong && c.stages == 4 && c.cluster == 1;
  });
}

// 2-CTA clusters sharing B by multicast: 15 M-tiles make 8 pairs, the last one's second
// tile wholly past M (computed, never stored); 66 clusters take 2-3 pairs each, so the
// ring (4 stages, K = 200: 3 full k steps and a partial one) wraps across tiles and both
// CTAs' releases gate every stage. Cooperative 128 x 128 and 128 x 256 tiles (B as [N, K]
// in boxes of half its rows) and the ping-pong one.
TEST_CASE("GEMM: wgmma with B multicast over 2-CTA clusters, every layout",
          "[gpu][gemm][wgmma][cluster]") {
  Driver &d = Driver::require();
  if (!wgmmaDevice(d))
    return;
  // The persistent grid holds only the clusters the device places at once (measured).
  WARN(d.clusterPairs << " 2-CTA clusters of a whole-SM kernel fit on " << d.deviceName << " ("
                      << d.smCount << " SMs)");
  CHECK(d.clusterPairs > 0);
  CHECK(d.clusterPairs <= d.smCount / 2);
  for (auto [bn, pp] : std::vector<std::pair<unsigned, bool>>{{128, false}, {256, false}, {128, true}}) {
    INFO("BN=" << bn << " ping-pong=" << pp);
    checkWgmmaCandidate(200, 910 + 10 * bn + pp, [bn = bn, pp = pp](const codegen::GemmSpec &c) {
      return c.cluster == 2 && c.bn == bn && c.pingpong == pp && c.stages == 4;
    });
  }
}

TEST_CASE("GEMM: broadcast batch dims, broadcast bias and residual epilogues", "[gpu][gemm]") {
  int run = 0;
  for (DType t : {DType::F32, DType::BF16})
    for (int64_t M : {int64_t(3), int64_t(70)}) {
      // a [2,1,M,K] x b [3,K,N] -> [2,3,M,N]; bias [3,1,N] broadcast over rows and dim 0.
      int64_t K = 40, N = 24;
      auto g = std::make_unique<Graph>("batched");
      Value a = g->input("a", t, {2, 1, M, K});
      Value b = g->input("b", t, {3, K, N});
      Value bias = g->input("bias", t, {3, 1, N});
      Value res = g->input("res", t, {2, 3, M, N});
      g->output(relu(matmul(a, b) + bias) + res);
      fuseGraph(*g);
      RunResult r = runOnGpu(*g, 900 + run++);
      REQUIRE(r.specs.size() == 1);
      INFO(dtypeName(t) << " M=" << M << " " << r.specs[0].gemm()->describe());
      CHECK(checkWithInterpreter(*g, r) == "");
      // A transposed, batched on B only: a [K, M]^T x b [4, N, K]^T.
      auto h = std::make_unique<Graph>("batchedT");
      Value a2 = h->input("a", t, {K, M});
      Value b2 = h->input("b", t, {4, N, K});
      h->output(matmul(a2, b2, {true, true}) * 2.0);
      fuseGraph(*h);
      RunResult r2 = runOnGpu(*h, 950 + run++);
      INFO(r2.specs[0].gemm()->describe());
      CHECK(checkWithInterpreter(*h, r2) == "");
    }
}

TEST_CASE("GEMM: the matmul result and its epilogue both stored, and a CUDA graph replay",
          "[gpu][gemm]") {
  for (int64_t M : {int64_t(4), int64_t(260)}) {
    auto g = std::make_unique<Graph>("two");
    Value a = g->input("a", DType::BF16, {M, 96});
    Value b = g->input("b", DType::BF16, {96, 136});
    Value h = matmul(a, b);
    g->output(h);
    g->output(tanh(h + g->input("bias", DType::BF16, {136})));
    fuseGraph(*g);
    for (bool replay : {false, true}) {
      RunResult r = runOnGpu(*g, 77 + M, replay);
      REQUIRE(r.specs.size() == 1);
      INFO("M=" << M << " replay=" << replay);
      CHECK(checkWithInterpreter(*g, r) == "");
    }
  }
}

TEST_CASE("GEMM: every example graph, fused by the default pipeline, on the GPU",
          "[gpu][gemm][examples]") {
  std::vector<std::string> files;
  for (const auto &e : std::filesystem::directory_iterator(examplesDir()))
    if (e.path().extension() == ".kf")
      files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 7);
  uint64_t seed = 1;
  for (const std::string &f : files)
    for (auto &g : parseFile(f)) {
      PassManager pm;
      pm.addPipeline(defaultPipeline());
      pm.run(*g);
      int64_t biggest = 0, flops = 0;
      for (const Node *n : g->nodes()) {
        biggest = std::max(biggest, n->type().numElements());
        if (n->kind() == OpKind::MatMul)
          flops += n->type().numElements() * maxK(*g);
      }
      bool small = biggest <= (int64_t(1) << 22) && flops <= (int64_t(1) << 30);
      if (!small && gputest::quickMode()) {
        WARN("KFUSE_GPU_QUICK: skipped example " << f << " graph " << g->name()
                                                 << " (too large to check fully)");
        continue;
      }
      RunResult r = runOnGpu(*g, seed++);
      INFO(f << ": " << r.specs.size() << " kernels, checked "
             << (small ? "fully by the interpreter" : "on samples"));
      CHECK((small ? checkWithInterpreter(*g, r) : checkSampled(*g, r, 400, seed)) == "");
    }
}
