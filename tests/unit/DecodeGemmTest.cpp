// The small-M (decode) GEMM's choices: tensor cores, B by TMA, the K split over a cluster,
// a persistent grid where one matrix's column tiles outnumber what the device holds, and
// stream-K as an autotune candidate (codegen/DecodeGemm.cpp). Its numbers are checked on
// the GPU (tests/gpu/GemmGpuTest.cpp, DecodeStreamKGpuTest.cpp, AutotuneGpuTest.cpp).
#include "codegen/CudaCodegen.h"
#include "codegen/DecodeGemm.h"
#include "codegen/GemmTuning.h"
#include "codegen/KernelEmitter.h"
#include "GemmGraphs.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

using namespace kfuse;
using namespace kfuse::codegen;

TEST_CASE("Decode GEMM (M <= 16, f16/bf16): tensor cores, K split over a cluster on sm_90",
          "[codegen][gemm]") {
  Target h100 = targetFor(90, 132), a100 = targetFor(80, 108);
  for (int64_t M = 1; M <= 16; ++M)
    for (bool tb : {false, true}) {
      INFO("M=" << M << " trans_b=" << tb);
      auto k = buildKernelSpecs(*biasRelu(bf16, M, 8192, 8192, {false, tb}), h100);
      REQUIRE(k[0].gemm());
      const GemmSpec &s = *k[0].gemm();
      CHECK(s.kernel == GemmKernel::Decode);
      CHECK(s.bm == 16);
      CHECK(s.bn == 64);
      CHECK(s.bk == 256);
      CHECK(s.stages == 4);
      CHECK(s.threads() == 256); // 8 warps
      CHECK(s.tensorMaps() == 1); // B by TMA
      CHECK(s.ks == 1); // 128 column tiles, one CTA per SM: 0.97 of one wave, no split
      CHECK(s.why.find(fmt::format("M={} <= 16", M)) != std::string::npos);
      CHECK(s.why.find("128 CTAs for 132 slots") != std::string::npos);
      CHECK(s.describe().find("(B by TMA), no K split, 4 stages, 8 warps") != std::string::npos);
      LaunchConfig c = k[0].launchConfig(256, 1);
      CHECK(c.grid == 128);
      CHECK(c.gridY == 1);
      CHECK(c.gridZ == 1);
      CHECK(c.block == 256);
      // 1 KB to align, 4 stages of B (256 x 64 dense, swizzled) and A (16 x 264), 2 bytes
      // each, 4 mbarriers.
      CHECK(c.sharedBytes == 1024 + 4 * (256 * 64 + 16 * 264) * 2 + 4 * 8);
      std::string src = emitProgram(k);
      CHECK(src.find("__cluster_dims__") == std::string::npos);
      CHECK(src.find("const __grid_constant__ kf_tmap tmB") != std::string::npos);
      CHECK(src.find(fmt::format("kf_gemm_decode<2, {}, 8192, 8192, false, {}, 64, 256, 4, 8, 1, true,",
                                 M, tb ? "true" : "false")) != std::string::npos);
      // [N, K] with K not a multiple of 8 cannot go by TMA: cp.async, two CTAs per SM.
      auto odd = buildKernelSpecs(*biasRelu(bf16, M, 8192, 8190, {false, true}), h100);
      CHECK(odd[0].gemm()->tensorMaps() == 0);
      CHECK(odd[0].gemm()->ks == 2);
      // sm_80: no clusters, so no K split, 3 stages (two CTAs in an A100 SM's 164 KB).
      auto k80 = buildKernelSpecs(*biasRelu(bf16, M, 8192, 8192, {false, tb}), a100);
      CHECK(k80[0].gemm()->kernel == GemmKernel::Decode);
      CHECK(k80[0].gemm()->ks == 1);
      CHECK(k80[0].gemm()->stages == 3);
      CHECK(k80[0].launchConfig(256, 1).gridY == 1);
      CHECK(k80[0].gemm()->why.find("no thread-block clusters before sm_90") != std::string::npos);
      CHECK(emitProgram(k80).find("__cluster_dims__") == std::string::npos);
    }
  // f16 too; the cluster size follows the grid: 4096 columns give 64 tiles, so KS=2 with
  // one (TMA) CTA per SM, KS=4 with two (cp.async, K = 4092 not a multiple of 8).
  auto h = buildKernelSpecs(*biasRelu(f16, 4, 4096, 4096, {false, true}), h100);
  CHECK(h[0].gemm()->kernel == GemmKernel::Decode);
  CHECK(h[0].gemm()->ks == 2);
  auto h2 = buildKernelSpecs(*biasRelu(f16, 4, 4096, 4092, {false, true}), h100);
  CHECK(h2[0].gemm()->ks == 4);
  // Empty K or N (found by BuilderFuzzer: the TMA map's matrix count divided by K x N = 0):
  // a decode kernel without a tensor map, never launched.
  for (auto [N, K] : std::vector<std::pair<int64_t, int64_t>>{{200, 0}, {0, 64}, {0, 0}}) {
    auto e = buildKernelSpecs(*biasRelu(bf16, 3, N, K, {false, true}), h100);
    CHECK(e[0].gemm()->kernel == GemmKernel::Decode);
    CHECK(e[0].gemm()->tensorMaps() == 0);
    for (const GemmSpec &c : gemmCandidates(*e[0].gemm(), h100))
      CHECK(c.tensorMaps() == 0);
  }
  // Small K: no rank may be left without a k tile (K=9: one tile, so no split).
  auto small = buildKernelSpecs(*biasRelu(bf16, 3, 200, 9), h100);
  CHECK(small[0].gemm()->kernel == GemmKernel::Decode);
  CHECK(small[0].gemm()->ks == 1);
  CHECK(emitProgram(small).find("__cluster_dims__") == std::string::npos);
  // M=17 is the tile kernels' (wgmma on sm_90a); f32 stays on the exact gemv.
  CHECK(buildKernelSpecs(*biasRelu(bf16, 17, 8192, 8192), h100)[0].gemm()->kernel ==
        GemmKernel::Wgmma);
  CHECK(buildKernelSpecs(*biasRelu(f32, 16, 8192, 8192), h100)[0].gemm()->kernel == GemmKernel::Gemv);
}

TEST_CASE("Decode GEMM: a persistent grid where one matrix's column tiles outnumber what the "
          "device holds; the K split by the busiest CTA's path",
          "[codegen][gemm]") {
  Target h100 = targetFor(90, 132), a100 = targetFor(80, 108);
  for (bool tb : {false, true}) {
    INFO("trans_b=" << tb);
    // 224 column tiles, 16 k tiles: no split, 132 CTAs taking 1-2 tiles (2 x 17 k-tile
    // steps, against 4 x 9 in 2-CTA clusters and 7 x 5 in 4-CTA ones).
    auto gate = buildKernelSpecs(*biasRelu(bf16, 1, 14336, 4096, {false, tb}), h100);
    const GemmSpec &g = *gate[0].gemm();
    CHECK(g.ks == 1);
    CHECK(g.ctas == 132);
    CHECK_FALSE(g.streamK);
    CHECK(decodeLoops(g));
    CHECK(gate[0].launchConfig(256, 1).grid == 132);
    CHECK(g.describe().find(", persistent over 132 CTAs") != std::string::npos);
    CHECK(g.why.find("persistent, 132 CTAs of 1 taking 1-2 column tiles each") != std::string::npos);
    // The warps' partial sums (8 x 1 x 72 floats) get their own shared memory after the
    // ring and the 16-byte-rounded mbarriers.
    CHECK(g.sharedBytes() == 1024 + 4 * (256 * 64 + 16 * 264) * 2 + 32 + 8 * 1 * 72 * 4);
    CHECK(emitProgram(gate).find(fmt::format(
              "kf_gemm_decode<2, 1, 14336, 4096, false, {}, 64, 256, 4, 8, 1, true, 132, false,",
              tb ? "true" : "false")) != std::string::npos);
    // GPT-2-XL's c_fc (1600 -> 6400): 100 tiles of 7 k tiles, one CTA each (the last-wave
    // rule gave 7-CTA clusters of one k tile over 5.3 waves).
    auto fc = buildKernelSpecs(*biasRelu(bf16, 1, 6400, 1600, {false, tb}), h100);
    CHECK(fc[0].gemm()->ks == 1);
    CHECK(fc[0].gemm()->ctas == 100);
    CHECK_FALSE(decodeLoops(*fc[0].gemm()));
    // 48 tiles of 96 k tiles: clusters of 8 in 3 waves of 16 (counted per 16 SMs), never
    // persistent (how many clusters of more than 2 fit at once depends on the GPCs).
    auto down = buildKernelSpecs(*biasRelu(bf16, 16, 3072, 24576, {false, tb}), h100);
    const GemmSpec &d = *down[0].gemm();
    CHECK(d.ks == 8);
    CHECK(d.ctas == 48);
    CHECK_FALSE(decodeLoops(d));
    LaunchConfig c = down[0].launchConfig(256, 1);
    CHECK(c.grid == 48);
    CHECK(c.gridY == 8);
    // 296 tiles of 14 k tiles: 66 persistent 2-CTA clusters taking 4-5 tiles (5 x 8 k-tile
    // steps against 3 x 15 unsplit), M = 16's partial sums beside a full ring.
    auto up = buildKernelSpecs(*biasRelu(bf16, 16, 18944, 3584, {false, tb}), h100);
    const GemmSpec &u = *up[0].gemm();
    CHECK(u.ks == 2);
    CHECK(u.ctas == 66);
    CHECK(decodeLoops(u));
    CHECK(u.sharedBytes() == 1024 + 4 * (256 * 64 + 16 * 264) * 2 + 32 + 8 * 16 * 72 * 4);
    CHECK(up[0].launchConfig(256, 1).grid == 66);
    CHECK(up[0].launchConfig(256, 1).gridY == 2);
    // Few tiles fill the SMs through the split instead: 16 tiles, 8-CTA clusters, one each.
    auto kproj = buildKernelSpecs(*biasRelu(bf16, 1, 1024, 4096, {false, tb}), h100);
    CHECK(kproj[0].gemm()->ks == 8);
    CHECK(kproj[0].gemm()->ctas == 16);
    CHECK_FALSE(decodeLoops(*kproj[0].gemm()));
  }
  // An A100 (cp.async, two CTAs per SM, no clusters): 216 persistent CTAs for 224 tiles.
  auto a = buildKernelSpecs(*biasRelu(bf16, 1, 14336, 4096, {false, true}), a100);
  CHECK(a[0].gemm()->ctas == 216);
  CHECK(decodeLoops(*a[0].gemm()));
  // A batch keeps one CTA per tile and matrix (grid z) and the last-wave rule.
  Graph b("batched");
  Value x = b.input("x", bf16, {2, 1, 4096});
  Value w = b.input("w", bf16, {2, 4096, 14336});
  b.output(matmul(x, w));
  auto bs = buildKernelSpecs(b, h100);
  CHECK(bs[0].gemm()->ctas == 224);
  CHECK_FALSE(decodeLoops(*bs[0].gemm()));
  CHECK(bs[0].launchConfig(256, 1).grid == 224);
  CHECK(bs[0].launchConfig(256, 1).gridZ == 2);
}

TEST_CASE("Decode GEMM: stream-K, an autotune candidate the heuristic never picks",
          "[codegen][gemm]") {
  Target h100 = targetFor(90, 132);
  for (bool tb : {false, true}) {
    INFO("trans_b=" << tb);
    // Llama-3-8B's gate_proj: 224 tiles x 16 k tiles = 3584 units, 27-28 per CTA.
    auto gate = buildKernelSpecs(*biasRelu(bf16, 1, 14336, 4096, {false, tb}), h100);
    GemmSpec g = *gate[0].gemm();
    CHECK_FALSE(g.streamK);
    std::vector<GemmSpec> cands = gemmCandidates(g, h100);
    size_t sk = 0;
    for (const GemmSpec &c : cands)
      sk += c.streamK;
    CHECK(sk == 1); // the chosen tile, once
    REQUIRE(configureDecodeStreamK(g, h100, 64, 256, 4, 8, true));
    CHECK(g.streamK);
    CHECK(g.ks == 1);
    CHECK(g.ctas == 132);
    CHECK(g.describe().find(", stream-K over 132 CTAs") != std::string::npos);
    CHECK(g.why.find("224 64-column tiles x 16 k tiles = 3584 units over 132 CTAs (1 per SM on "
                     "132 SMs), 27-28 each") != std::string::npos);
    // The warps' partial sums beside the ring, as a persistent grid's.
    CHECK(g.sharedBytes() == 1024 + 4 * (256 * 64 + 16 * 264) * 2 + 32 + 8 * 1 * 72 * 4);
    gate[0].kind = g;
    LaunchConfig c = gate[0].launchConfig(256, 1);
    CHECK(c.grid == 132);
    CHECK(c.gridY == 1);
    CHECK_FALSE(c.cooperative()); // no CTA waits on another
    // The workspace: 224 counters (896 bytes), then 2 slots of 1 x 64 floats per CTA.
    std::vector<KernelParam> ps = emitterFor(gate[0]).params(gate[0]);
    REQUIRE(ps.back().kind == KernelParam::Workspace);
    CHECK(ps.back().workspaceBytes == 896 + 2 * 132 * 64 * 4);
    const std::string src = emitProgram(gate);
    CHECK(src.find("void *__restrict__ ws)") != std::string::npos);
    CHECK(src.find(fmt::format(
              "kf_gemm_decode<2, 1, 14336, 4096, false, {}, 64, 256, 4, 8, 1, true, 132, true,",
              tb ? "true" : "false")) != std::string::npos);
    CHECK(src.find(", epi, ws);") != std::string::npos);
    // M = 16 (Gemma-7B's down_proj, 48 tiles x 96 k tiles): slots of 16 x 64 floats.
    GemmSpec d = *buildKernelSpecs(*biasRelu(bf16, 16, 3072, 24576, {false, tb}), h100)[0].gemm();
    REQUIRE(configureDecodeStreamK(d, h100, 64, 256, 4, 8, true));
    CHECK(decodeWorkspaceBytes(d) == 192 + 2 * 132 * 16 * 64 * 4);
  }
  // Fewer than two units per CTA (k_proj 4096 -> 1024: 16 tiles x 16 k tiles = 256 for 132
  // CTAs) or a batch: no stream-K configuration, and no such candidate.
  GemmSpec few = *buildKernelSpecs(*biasRelu(bf16, 1, 1024, 4096, {false, true}), h100)[0].gemm();
  CHECK_FALSE(configureDecodeStreamK(few, h100, 64, 256, 4, 8, true));
  CHECK_FALSE(few.streamK);
  for (const GemmSpec &c : gemmCandidates(few, h100))
    CHECK_FALSE(c.streamK);
  Graph b("batched");
  Value x = b.input("x", bf16, {2, 1, 4096});
  b.output(matmul(x, b.input("w", bf16, {2, 4096, 14336})));
  GemmSpec batched = *buildKernelSpecs(b, h100)[0].gemm();
  CHECK_FALSE(configureDecodeStreamK(batched, h100, 64, 256, 4, 8, true));
  // Without stream-K the spec carries no workspace.
  auto fc = buildKernelSpecs(*biasRelu(bf16, 1, 6400, 1600, {false, true}), h100);
  CHECK(decodeWorkspaceBytes(*fc[0].gemm()) == 0);
  CHECK(emitterFor(fc[0]).params(fc[0]).back().kind == KernelParam::Pointer);
}
