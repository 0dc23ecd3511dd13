// GEMM kernel specs and codegen without a GPU: kernel selection by shape and architecture,
// broadcast batch strides, the epilogue emitted from the op list, deterministic source,
// and NVRTC compiles of every kernel variant for sm_80 and sm_90.
#include "codegen/CudaCodegen.h"
#include "codegen/GemmTuning.h"
#include "analysis/KernelEstimate.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "passes/Fusion.h"
#include "compiler/Nvrtc.h"
#include "GemmGraphs.h"

#include <catch2/catch.hpp>

using namespace kfuse;
using namespace kfuse::codegen;

TEST_CASE("GEMM kernel selection by shape and architecture, with a reason", "[codegen][gemm]") {
  Target h100 = targetFor(90, 132), portable = targetFor(90, 132, false), turing = targetFor(75, 40);
  // sm_90a: wgmma with TMA-staged operands, 128x256 tiles where they fill the SMs.
  auto big = buildKernelSpecs(*biasRelu(bf16, 4096, 4096, 4096), h100);
  REQUIRE(big.size() == 1);
  REQUIRE(big[0].gemm());
  const GemmSpec &w = *big[0].gemm();
  CHECK(w.kernel == GemmKernel::Wgmma);
  CHECK(w.bm == 128);
  CHECK(w.bn == 256);
  CHECK(w.why.find("512 128x256 tiles in 4 rounds on 132 SMs") != std::string::npos);
  CHECK(w.cluster == 1);
  // Mid-size problems: the tile of least rounds x tile time (the autotuner's winners on the
  // H200, device run 8 of 2026-12-03): 64x128 where the bigger tiles leave SMs idle, 128x256
  // in one partial round, 128x128 in 2-CTA clusters where it takes one round and 128x256
  // would leave half the SMs idle.
  struct Choice {
    int64_t M, N, K;
    unsigned bm, bn, cluster, ctas;
  };
  for (const Choice &c : std::vector<Choice>{{256, 4096, 4096, 64, 128, 1, 128},
                                             {1024, 1024, 4096, 64, 128, 1, 128},
                                             {1536, 1536, 4096, 128, 256, 1, 72},
                                             {2048, 2048, 4096, 128, 256, 1, 128},
                                             {768, 2048, 8192, 128, 128, 2, 96}}) {
    auto k = buildKernelSpecs(*biasRelu(bf16, c.M, c.N, c.K), h100);
    REQUIRE(k[0].gemm());
    const GemmSpec &s = *k[0].gemm();
    INFO(c.M << "x" << c.N << "x" << c.K << ": " << s.describe());
    CHECK(s.kernel == GemmKernel::Wgmma);
    CHECK(s.bm == c.bm);
    CHECK(s.bn == c.bn);
    CHECK(s.cluster == c.cluster);
    CHECK(s.ctas == c.ctas);
  }
  LaunchConfig wc = big[0].launchConfig(256, 1000);
  CHECK(wc.grid == 132); // persistent: one CTA per SM, each looping over the 512 tiles
  CHECK(wc.gridY == 1);
  CHECK(wc.gridZ == 1);
  CHECK(wc.block == 384); // a TMA producer warpgroup and two wgmma consumers
  CHECK(wc.sharedBytes == 1024 + 4 * (128 + 256) * 64 * 2 + 4 * 16 + 8 * 16 * 72 * 2);
  // A [M,K]: boxes of 64 K x 128 rows; B [K,N]: boxes of 64 N x 64 K (N-major, transposed).
  CHECK(w.tmaA.dims[0] == 4096);
  CHECK(w.tmaA.box[1] == 128);
  CHECK(w.tmaA.strides[0] == 4096 * 2);
  CHECK(w.tmaB.box[0] == 64);
  CHECK(w.tmaB.box[1] == 64);
  CHECK(compileArch(h100) == "sm_90a");
  // Portable sm_90 (and sm_80): mma.sync, saying why not wgmma.
  auto tc = buildKernelSpecs(*biasRelu(bf16, 4096, 4096, 4096), portable);
  const GemmSpec &s = *tc[0].gemm();
  CHECK(s.kernel == GemmKernel::TensorCore);
  CHECK(s.bm == 128);
  CHECK(s.why.find("1024 128x128 tiles") != std::string::npos);
  CHECK(s.why.find("not wgmma: portable sm_90") != std::string::npos);
  CHECK(compileArch(portable) == "sm_90");
  LaunchConfig c = tc[0].launchConfig(256, 1000);
  CHECK(c.grid == 32);
  CHECK(c.gridY == 32);
  CHECK(c.gridZ == 1);
  CHECK(c.block == 256);
  CHECK(c.sharedBytes == 4 * (128 * 40 + 32 * 136) * 2); // > 48 KB: the runtime opts in
  // Few tiles: a smaller tile to fill the SMs (128x128 for wgmma, 64x64 for mma.sync).
  auto mlp = buildKernelSpecs(*biasRelu(bf16, 64, 11008, 4096, {false, true}), h100);
  CHECK(mlp[0].gemm()->kernel == GemmKernel::Wgmma);
  CHECK(mlp[0].gemm()->bn == 128);
  CHECK(mlp[0].gemm()->tmaB.box[1] == 128); // B [N,K]: K-major boxes of 64 K x 128 rows
  auto mlpTc = buildKernelSpecs(*biasRelu(bf16, 64, 11008, 4096, {false, true}), portable);
  CHECK(mlpTc[0].gemm()->bm == 64);
  CHECK(mlpTc[0].gemm()->why.find("so 64x64") != std::string::npos);
  // TMA needs 16-byte rows: K = 61 for A [M,K] keeps mma.sync, and says so.
  auto odd = buildKernelSpecs(*biasRelu(f16, 300, 512, 61), h100);
  CHECK(odd[0].gemm()->kernel == GemmKernel::TensorCore);
  CHECK(odd[0].gemm()->why.find("not wgmma: A's rows (61 elements)") != std::string::npos);
  // No f16 mma.sync before sm_80 (and no bf16 at all: refused when specs are built, naming
  // the op); f32 stays exact (FFMA, no TF32).
  CHECK(buildKernelSpecs(*biasRelu(f16, 4096, 512, 512), turing)[0].gemm()->kernel ==
        GemmKernel::Simt);
  CHECK_THROWS_WITH(buildKernelSpecs(*biasRelu(bf16, 4096, 512, 512), turing),
                    Catch::Contains("matmul") && Catch::Contains("is bf16, which needs sm_80") &&
                        Catch::Contains("the target is sm_75"));
  auto fp = buildKernelSpecs(*biasRelu(f32, 300, 512, 512), h100);
  CHECK(fp[0].gemm()->kernel == GemmKernel::Simt);
  CHECK(fp[0].gemm()->why.find("no TF32") != std::string::npos);
  // Small M in f32 (or f16/bf16 before sm_80): the weight-streaming gemv, either layout.
  for (bool tb : {false, true}) {
    auto dec = buildKernelSpecs(*biasRelu(f32, 1, 8192, 8192, {false, tb}), h100);
    CHECK(dec[0].gemm()->kernel == GemmKernel::Gemv);
    CHECK(dec[0].gemm()->why.find("M=1 <= 16") != std::string::npos);
    CHECK(dec[0].launchConfig(256, 1).grid * dec[0].launchConfig(256, 1).gridY >= 2 * 132 - 8);
    CHECK(buildKernelSpecs(*biasRelu(f16, 1, 8192, 8192, {false, tb}), turing)[0].gemm()->kernel ==
          GemmKernel::Gemv);
  }
  CHECK(buildKernelSpecs(*biasRelu(bf16, 17, 8192, 8192), h100)[0].gemm()->kernel ==
        GemmKernel::Wgmma);
  CHECK(buildKernelSpecs(*biasRelu(bf16, 17, 8192, 8192), portable)[0].gemm()->kernel ==
        GemmKernel::TensorCore);
}

TEST_CASE("Architecture names: sm_90a is arch-specific, sm_90 portable, others refused",
          "[codegen][gemm]") {
  CHECK(withArch({}, "sm_90a").archSpecific);
  CHECK(withArch({}, "sm_90a").sm == 90);
  CHECK_FALSE(withArch({}, "sm_90").archSpecific);
  CHECK(withArch({}, "sm_80").sm == 80);
  CHECK(compileArch(withArch({}, "sm_80")) == "sm_80");
  for (const char *bad : {"sm_", "90", "sm_9x", "sm_80a", "sm_a", "sm_123456", "sm_8", "sm_70"})
    CHECK_THROWS_WITH(withArch({}, bad), Catch::Contains("--arch"));
}

TEST_CASE("Hopper GEMM: batch matrices of the tensor maps and the kernel's parameters",
          "[codegen][gemm]") {
  Graph g("batchedWg");
  Value a = g.input("a", bf16, {2, 1, 40, 64});
  Value b = g.input("b", bf16, {3, 64, 24});
  g.output(relu(matmul(a, b)));
  fuseGraph(g);
  auto specs = buildKernelSpecs(g, targetFor(90, 132));
  const GemmSpec &s = *specs[0].gemm();
  REQUIRE(s.kernel == GemmKernel::Wgmma);
  CHECK(s.tmaA.dims[0] == 64);
  CHECK(s.tmaA.dims[1] == 40);
  CHECK(s.tmaA.dims[2] == 2); // A's own two matrices, broadcast over B's three
  CHECK(s.tmaA.strides[1] == 40 * 64 * 2);
  CHECK(s.tmaB.dims[0] == 24);
  CHECK(s.tmaB.dims[1] == 64);
  CHECK(s.tmaB.dims[2] == 3);
  std::string src = emitProgram(specs);
  CHECK(src.find("const __grid_constant__ kf_tmap tmA, const __grid_constant__ kf_tmap tmB") !=
        std::string::npos);
  CHECK(src.find("make_int2((int)((unsigned long long)(z / 3u) * 1ull), (int)((unsigned long "
                 "long)(z % 3u) * 1ull))") != std::string::npos);
  CHECK(src.find("kf_gemm_wg<2, 40, 24, 64, false, false, 1, 128, 8, 6, false,") != std::string::npos);
  CHECK(specs[0].launchConfig(256, 1).grid == 6);  // 6 tiles (1 per batch): 6 CTAs
  CHECK(specs[0].launchConfig(256, 1).gridZ == 1); // batches inside the tile loop
  CHECK(src.find("struct kf_wgmma<128>") != std::string::npos);
  CHECK(src.find("struct kf_wgmma<256>") == std::string::npos); // only the widths in use
}

TEST_CASE("GEMM spec: broadcast batch strides and the epilogue from the op list",
          "[codegen][gemm]") {
  Graph g("batched");
  Value a = g.input("a", bf16, {2, 1, 5, 40});
  Value b = g.input("b", bf16, {3, 40, 24});
  Value bias = g.input("bias", bf16, {3, 1, 24});
  g.output(silu(matmul(a, b) * 0.5 + bias));
  fuseGraph(g);
  auto specs = buildKernelSpecs(g);
  REQUIRE(specs.size() == 1);
  const GemmSpec &s = *specs[0].gemm();
  CHECK(s.batchShape == Shape{2, 3});
  CHECK(s.strideA == std::vector<int64_t>{5 * 40, 0});
  CHECK(s.strideB == std::vector<int64_t>{0, 40 * 24});
  CHECK(s.M == 5);
  CHECK(s.N == 24);
  CHECK(s.K == 40);
  CHECK(specs[0].launchConfig(256, 1).gridZ == 6);
  // A and B first (read by the GEMM), then the epilogue's own inputs.
  REQUIRE(specs[0].inputs.size() == 3);
  CHECK(specs[0].ops[0].kind == OpKind::MatMul);
  CHECK(specs[0].ops.size() == 4);
  std::string src = emitProgram(specs);
  CHECK(src.find("const float t1 = acc * 0.5f;") != std::string::npos);
  CHECK(src.find("kf_silu(") != std::string::npos);
  CHECK(src.find("in2[(i) % 24u + ((i / 120u) % 3u) * 24u]") != std::string::npos);
  CHECK(src.find("in0 + ((unsigned long long)(z / 3u) * 200ull)") != std::string::npos);
  CHECK(src.find("in1 + ((unsigned long long)(z % 3u) * 960ull)") != std::string::npos);
  CHECK(src.find("kf_gemm_decode<2, 5, 24, 40, false,") != std::string::npos);
  CHECK(emitProgram(buildKernelSpecs(g)) == src); // byte-for-byte stable
  // Elementwise-only programs do not carry the GEMM templates.
  Graph e("ew");
  e.output(relu(e.input("x", f32, {10})));
  CHECK(emitProgram(buildKernelSpecs(e)).find("kf_gemm_tc") == std::string::npos);
}

TEST_CASE("GEMM: too many batches are refused clearly", "[codegen][gemm]") {
  Graph g("many");
  g.output(matmul(g.input("a", f32, {70000, 2, 2}), g.input("b", f32, {2, 2})));
  CHECK_THROWS_WITH(buildKernelSpecs(g), Catch::Contains("70000 batches exceed the 65535"));
}

TEST_CASE("GEMM: a dimension of 2^31 or more is refused before NVRTC, naming M, N or K",
          "[codegen][gemm]") {
  const int64_t big = int64_t(1) << 31;
  auto check = [](int64_t M, int64_t N, int64_t K, const char *what) {
    Graph g("wide");
    g.output(matmul(g.input("a", f32, {M, K}), g.input("b", f32, {K, N})));
    CHECK_THROWS_WITH(buildKernelSpecs(g), Catch::Contains(what) &&
                                               Catch::Contains("is 2^31 or more; the GEMM kernels"));
  };
  check(big, 16, 64, "M = 2147483648");
  check(16, big, 64, "N = 2147483648");
  check(2, 2, big, "K = 2147483648");
  Graph ok("edge");
  ok.output(matmul(ok.input("a", f32, {big - 1, 2}), ok.input("b", f32, {2, 2})));
  CHECK(buildKernelSpecs(ok).size() == 1);
}

TEST_CASE("NVRTC compiles every GEMM kernel variant for sm_80 and sm_90a", "[nvrtc][gemm]") {
  // One program: each matmul is its own kernel (a matmul never fuses into another).
  Graph g("variants");
  struct V {
    DType t;
    int64_t M, N, K;
    bool ta, tb;
  };
  std::vector<V> vs = {{bf16, 300, 203, 72, false, false}, {f16, 300, 203, 61, true, true},
                       {bf16, 4096, 512, 64, true, false}, {f16, 300, 200, 72, false, true},
                       {f32, 300, 203, 61, true, false},   {bf16, 5, 203, 72, false, true},
                       {f16, 5, 203, 61, true, false},     {f32, 16, 203, 72, false, false},
                       {f32, 3, 77, 45, true, true}};
  for (size_t i = 0; i < vs.size(); ++i) {
    const V &v = vs[i];
    Value a = g.input(fmt::format("a{}", i), v.t, v.ta ? Shape{v.K, v.M} : Shape{v.M, v.K});
    Value b = g.input(fmt::format("b{}", i), v.t, v.tb ? Shape{v.N, v.K} : Shape{v.K, v.N});
    g.output(gelu_tanh(matmul(a, b, {v.ta, v.tb}) + g.input(fmt::format("bias{}", i), v.t, {v.N})));
  }
  fuseGraph(g);
  for (unsigned sm : {80u, 90u}) {
    Target target = targetFor(sm, 132);
    auto specs = buildKernelSpecs(g, target);
    REQUIRE(specs.size() == vs.size());
    unsigned kinds = 0;
    for (const KernelSpec &k : specs)
      kinds |= 1u << static_cast<unsigned>(k.gemm()->kernel);
    auto bit = [](GemmKernel k) { return 1u << static_cast<unsigned>(k); };
    unsigned portable = bit(GemmKernel::TensorCore) | bit(GemmKernel::Simt) |
                        bit(GemmKernel::Gemv) | bit(GemmKernel::Decode);
    // mma.sync, FFMA, gemv (f32) and decode (f16/bf16) everywhere; on sm_90a also wgmma
    // (bf16 M/N-major A and B, f16 K-major A and B).
    CHECK(kinds == (sm == 90 ? portable | bit(GemmKernel::Wgmma) : portable));
    std::string src = emitProgram(specs);
    compiler::CompiledProgram p = compiler::nvrtcCompile(src, compileArch(target), true);
    if (sm == 90) {
      CHECK(p.ptx.find("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16") !=
            std::string::npos);
      CHECK(p.ptx.find("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16") != std::string::npos);
      CHECK(p.ptx.find("cp.async.bulk.tensor.3d.shared::cluster.global") != std::string::npos);
      CHECK(p.ptx.find("setmaxnreg.inc.sync.aligned.u32") != std::string::npos);
    }
    CHECK(p.cubin.compare(0, 4,
                          "\x7f"
                          "ELF") == 0);
    for (const KernelSpec &k : specs)
      CHECK(p.ptx.find(".entry " + k.mangled) != std::string::npos);
    CHECK(p.ptx.find("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") != std::string::npos);
    CHECK(p.ptx.find("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") != std::string::npos);
    CHECK(p.ptx.find("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") != std::string::npos);
    CHECK(p.ptx.find("cp.async.cg.shared.global") != std::string::npos);
  }
}

TEST_CASE("NVRTC compiles decode GEMM variants: clusters and DSMEM on sm_90, none on sm_80",
          "[nvrtc][gemm]") {
  Graph g("decode_variants");
  struct V {
    DType t;
    int64_t M, N, K;
    bool ta, tb;
  };
  // Tile-multiple and odd N/K (200, 1000, 9), M across 1..16, every transpose pair, and the
  // benchmark shapes (the K split over a cluster on sm_90).
  std::vector<V> vs = {{bf16, 1, 8192, 8192, false, false}, {bf16, 16, 8192, 8192, false, true},
                       {f16, 3, 200, 1000, true, false},    {bf16, 7, 200, 9, false, true},
                       {f16, 8, 200, 1000, true, true},     {bf16, 15, 203, 1000, false, false},
                       {f16, 16, 64, 72, true, false},      {bf16, 2, 77, 9, true, true}};
  for (size_t i = 0; i < vs.size(); ++i) {
    const V &v = vs[i];
    Value a = g.input(fmt::format("a{}", i), v.t, v.ta ? Shape{v.K, v.M} : Shape{v.M, v.K});
    Value b = g.input(fmt::format("b{}", i), v.t, v.tb ? Shape{v.N, v.K} : Shape{v.K, v.N});
    g.output(relu(matmul(a, b, {v.ta, v.tb}) + g.input(fmt::format("bias{}", i), v.t, {v.N})));
  }
  fuseGraph(g);
  for (unsigned sm : {80u, 90u}) {
    INFO("sm_" << sm);
    auto specs = buildKernelSpecs(g, targetFor(sm, 132));
    REQUIRE(specs.size() == vs.size());
    unsigned split = 0;
    for (const KernelSpec &k : specs) {
      CHECK(k.gemm()->kernel == GemmKernel::Decode);
      split += k.gemm()->ks > 1;
    }
    CHECK((sm >= 90 ? split >= 2 : split == 0));
    std::string src = emitProgram(specs);
    compiler::CompiledProgram p = compiler::nvrtcCompile(src, "sm_" + std::to_string(sm), true);
    CHECK(p.cubin.compare(0, 4,
                          "\x7f"
                          "ELF") == 0);
    for (const KernelSpec &k : specs)
      CHECK(p.ptx.find(".entry " + k.mangled) != std::string::npos);
    CHECK(p.ptx.find("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") != std::string::npos);
    CHECK(p.ptx.find("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") != std::string::npos);
    CHECK(p.ptx.find("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") != std::string::npos);
    CHECK(p.ptx.find("cp.async.cg.shared.global") != std::string::npos);
    bool cluster = sm >= 90;
    CHECK((p.ptx.find(".reqnctapercluster 1, ") != std::string::npos) == cluster);
    CHECK((p.ptx.find("cp.async.bulk.tensor.3d") != std::string::npos) == cluster); // TMA B
    CHECK((p.ptx.find("mapa.shared::cluster.u32") != std::string::npos) == cluster);
    CHECK((p.ptx.find("ld.shared::cluster.f32") != std::string::npos) == cluster);
    CHECK((p.ptx.find("barrier.cluster.arrive.release.aligned") != std::string::npos) == cluster);
    CHECK((p.ptx.find("barrier.cluster.wait.acquire.aligned") != std::string::npos) == cluster);
    CHECK((p.ptx.find("%cluster_ctarank") != std::string::npos) == cluster);
  }
}

TEST_CASE("expected kernel time: roofline, GEMM tile quantization, fixed cost per kernel",
          "[codegen][gemm][estimate]") {
  Target h90 = targetFor(90, 132);
  Target h200 = parseTarget("h200"), seed = parseTarget("seed");
  // 4096^3 on 128x256 tiles: 512 tiles take 4 rounds of 132 SMs, 0.97 of them busy.
  auto big = buildKernelSpecs(*biasRelu(bf16, 4096, 4096, 4096), h90);
  KernelEstimate e = estimateKernel(big[0], h200);
  CHECK(e.computeBound);
  CHECK(e.busy == Approx(512.0 / (4 * 132)));
  CHECK(e.useful == 1);
  CHECK(e.roofSeconds == Approx(big[0].flops() / 790e12));
  CHECK(e.seconds == Approx(big[0].flops() / 790e12 / e.busy + 4e-6));
  CHECK(e.why.find("512 128x256 tiles in 4 rounds of 132") != std::string::npos);
  CHECK(e.why.find("+ 4 us per kernel") != std::string::npos);
  // One more row: a 33rd row of tiles, 528 tiles in 4 rounds (all busy) but the last row of
  // tiles computes 127 rows of padding.
  auto edge = buildKernelSpecs(*biasRelu(bf16, 4097, 4096, 4096), h90);
  KernelEstimate ee = estimateKernel(edge[0], h200);
  CHECK(ee.busy == Approx(1.0));
  CHECK(ee.useful == Approx(4097.0 / (33 * 128)));
  CHECK(ee.seconds > e.seconds);
  // Fewer tiles than SMs: the mlp's 86 64x128 tiles keep 86 of 132 SMs busy; its weights
  // make it memory-bound all the same.
  auto mlp = buildKernelSpecs(*biasRelu(bf16, 64, 11008, 4096, {false, true}), h90);
  KernelEstimate em = estimateKernel(mlp[0], h200);
  CHECK(em.busy == Approx(86.0 / 132));
  CHECK(!em.computeBound);
  CHECK(em.seconds == Approx(double(mlp[0].bytesMoved()) / 4.19e12 + 4e-6));
  // Decode: memory-bound on the weights, whatever the 16-row tile computes.
  auto dec = buildKernelSpecs(*biasRelu(bf16, 1, 8192, 8192), h90);
  KernelEstimate ed = estimateKernel(dec[0], h200);
  CHECK(!ed.computeBound);
  CHECK(ed.useful == Approx(1.0 / 16));
  CHECK(ed.seconds == Approx(double(dec[0].bytesMoved()) / 4.19e12 + 4e-6));
  CHECK(ed.why.find("memory-bound: 134 MB at 4.19 TB/s") != std::string::npos);
  // No fixed cost in the seed's model: the roofline stretched by the tiles alone.
  KernelEstimate e100 = estimateKernel(big[0], seed);
  CHECK(e100.seconds == Approx(big[0].flops() / 1979e12 / e100.busy));
  CHECK(e100.why.find("not measured") != std::string::npos);
  // An elementwise kernel: its bytes at the bandwidth plus the fixed cost.
  Graph g("ew");
  g.output(g.input("x", f32, {1 << 20}) * 2.0);
  fuseGraph(g);
  auto ew = buildKernelSpecs(g, h90);
  KernelEstimate ex = estimateKernel(ew[0], h200);
  CHECK(ex.seconds == Approx(8.0 * (1 << 20) / 4.19e12 + 4e-6));
  CHECK(ex.busy == 1);
  // Kernels below the tensor cores' wgmma rate, each at its share measured on the H200
  // (device runs 4 and 8 of 2026-12-04, 4096^3 + bias + relu; run 2 for mma.sync bf16): exact f32
  // FFMA 5.57 ms, TF32 mma.sync 1.24 ms, bf16 mma.sync (portable sm_90) 493 us. The
  // estimate must land within 10% of each, where the bare roofline said 174 us for all.
  Target tf = targetFor(90, 132), portable = withArch({}, "sm_90");
  struct Measured {
    DType t;
    const Target *target;
    bool tf32;
    GemmKernel kernel;
    double seconds;
  };
  for (const Measured &m : {Measured{f32, &h90, false, GemmKernel::Simt, 5.570e-3},
                            Measured{f32, &tf, true, GemmKernel::TensorCore, 1.2412e-3},
                            Measured{bf16, &portable, false, GemmKernel::TensorCore, 493.2e-6},
                            Measured{f32, &tf, true, GemmKernel::Wgmma, 383.5e-6}}) {
    // The last: TF32 on wgmma, W as [N, K] (device run 7).
    const bool nt = m.kernel == GemmKernel::Wgmma;
    auto k = buildKernelSpecs(*biasRelu(m.t, 4096, 4096, 4096, {false, nt}), *m.target, nullptr, m.tf32);
    REQUIRE(k[0].gemm());
    CHECK(k[0].gemm()->kernel == m.kernel);
    KernelEstimate est = estimateKernel(k[0], *m.target);
    INFO(k[0].gemm()->describe() << ": " << est.why);
    CHECK(est.seconds == Approx(m.seconds).epsilon(0.10));
    CHECK(est.rate < 0.5);
    CHECK(est.why.find("kernel rate") != std::string::npos);
  }
  CHECK(e.rate == 1); // the 128x256 wgmma tile is the rate's reference
}

TEST_CASE("f32 matmuls are exact f32 unless TF32 is allowed, then mma.sync on TF32",
          "[codegen][gemm][tf32]") {
  // A device and the user's TF32 policy (CompileOptions::allowTf32).
  struct On {
    Target target;
    bool tf32 = false;
  };
  const On h200{targetFor(90, 132)}, ampere{targetFor(80, 108)}, turing{targetFor(75, 40)};
  const On h200tf{targetFor(90, 132), true}, ampereTf{targetFor(80, 108), true},
      turingTf{targetFor(75, 40), true};
  auto spec = [](DType t, int64_t M, int64_t N, int64_t K, const On &on,
                 MatMulAttrs at = {}) {
    auto k = buildKernelSpecs(*biasRelu(t, M, N, K, at), on.target, nullptr, on.tf32);
    REQUIRE(k.size() == 1);
    REQUIRE(k[0].gemm());
    return *k[0].gemm();
  };
  // By default an f32 matmul keeps f32's 24-bit mantissa: FFMA tiles, on every device.
  for (const On &t : {h200, ampere, turing}) {
    GemmSpec s = spec(f32, 1000, 1000, 1000, t);
    CHECK(s.kernel == GemmKernel::Simt);
    CHECK_FALSE(s.tf32());
    CHECK(s.why.find("exact f32") != std::string::npos);
  }
  // Allowed: tensor cores (sm_80 and up) on inputs rounded to TF32, f32 accumulation.
  for (const On &t : {h200tf, ampereTf}) {
    GemmSpec s = spec(f32, 1000, 1000, 1000, t);
    INFO(s.describe() << ": " << s.why);
    CHECK(s.kernel == GemmKernel::TensorCore);
    CHECK(s.tf32());
    CHECK(s.describe().find("TF32") != std::string::npos);
    CHECK(s.why.find("TF32 allowed") != std::string::npos);
    CHECK(s.bm == 64); // 64 tiles of 128x128 for 108/132 SMs would leave SMs idle: 64x64
  }
  // 4096^2: 1024 tiles of 128x128 fill the SMs; 4 stages of 32-wide f32 k slices fit sm_90
  // and sm_80 (143 KB); sm_86 (99 KB) takes 2.
  GemmSpec big = spec(f32, 4096, 4096, 4096, h200tf);
  CHECK(big.bm == 128);
  CHECK(big.bn == 128);
  CHECK(big.stages == 4);
  CHECK(big.sharedBytes() == 4 * (128 * (32 + 4) + 32 * (128 + 8)) * 4);
  GemmSpec bt = spec(f32, 4096, 4096, 4096, h200tf, {true, true});
  CHECK(bt.sharedBytes() == 4 * (32 * (128 + 8) + 128 * (32 + 4)) * 4);
  const On ga102{targetFor(86, 84), true};
  GemmSpec small = spec(f32, 4096, 4096, 4096, ga102);
  CHECK(small.stages == 2);
  CHECK(small.sharedBytes() <= 99 * 1024);
  // Not below sm_80 (no TF32 mma.sync), not for M <= 16 (memory-bound: gemv), and bf16 is
  // unaffected.
  CHECK(spec(f32, 1000, 1000, 1000, turingTf).kernel == GemmKernel::Simt);
  CHECK(spec(f32, 8, 4096, 4096, h200tf).kernel == GemmKernel::Gemv);
  CHECK(spec(bf16, 4096, 4096, 4096, h200tf).kernel == GemmKernel::Wgmma);
  // The autotuner's key tells a TF32 problem from an exact one (f32 only).
  CHECK(gemmProblemKey(big, h200.target) !=
        gemmProblemKey(spec(f32, 4096, 4096, 4096, h200), h200.target));
  GemmSpec half = spec(bf16, 4096, 4096, 4096, h200tf);
  CHECK(gemmProblemKey(half, h200.target) ==
        gemmProblemKey(spec(bf16, 4096, 4096, 4096, h200), h200.target));
  // On sm_90a, A [M, K] and B [N, K] (trans_b, nn.Linear's weights): both K-major, as wgmma
  // reads TF32 operands, so the Hopper kernel on f32 rows of 32 elements (128 bytes); any
  // other layout, a portable target, or rows that are not 16-byte multiples: mma.sync.
  GemmSpec nt = spec(f32, 4096, 4096, 4096, h200tf, {false, true});
  INFO(nt.describe() << ": " << nt.why);
  CHECK(nt.kernel == GemmKernel::Wgmma);
  CHECK(nt.tf32());
  CHECK(nt.bk == 32);
  CHECK(nt.describe().find("wgmma+TMA TF32 128x256x32") != std::string::npos);
  CHECK(nt.why.find("TF32 allowed") != std::string::npos);
  CHECK(nt.tmaA.box[0] == 32);
  CHECK(nt.tmaA.strides[0] == 4096 * 4);
  CHECK(nt.tmaB.box[0] == 32);
  CHECK(nt.sharedBytes() == spec(bf16, 4096, 4096, 4096, h200, {false, true}).sharedBytes());
  CHECK(big.kernel == GemmKernel::TensorCore); // B [K, N]: N-major
  CHECK(big.why.find("not wgmma: TF32 wgmma reads K-major A and B only") != std::string::npos);
  const On portableTf{withArch({}, "sm_90"), true};
  CHECK(spec(f32, 4096, 4096, 4096, portableTf, {false, true}).kernel == GemmKernel::TensorCore);
  CHECK(spec(f32, 4096, 4096, 4098, h200tf, {false, true}).kernel == GemmKernel::TensorCore);
  CHECK(spec(f32, 4096, 4096, 4100, h200tf, {false, true}).kernel == GemmKernel::Wgmma);
  // Its autotune candidates are wgmma ones, TF32 too.
  for (const GemmSpec &c : gemmCandidates(nt, h200tf.target)) {
    CHECK(c.kernel == GemmKernel::Wgmma);
    CHECK(c.bk == 32);
  }
  {
    auto w = buildKernelSpecs(*biasRelu(f32, 300, 520, 264, {false, true}), h200tf.target, nullptr, true);
    std::string wsrc = emitProgram(w);
    compiler::CompiledProgram wp = compiler::nvrtcCompile(wsrc, compileArch(h200tf.target), true);
    CHECK(wp.ptx.find("k8.f32.tf32.tf32") != std::string::npos);
    CHECK(wp.ptx.find("wgmma.mma_async.sync.aligned.m64n") != std::string::npos);
  }
  // The kernel: f32 tiles by cp.async, rounded to TF32 (round to nearest, ties away) as
  // they are read, mma.sync m16n8k8.
  auto specs = buildKernelSpecs(*biasRelu(f32, 300, 203, 61, {true, false}), h200tf.target, nullptr, true);
  std::string src = emitProgram(specs);
  CHECK(src.find("kf_gemm_tc<0, ") != std::string::npos);
  compiler::CompiledProgram p = compiler::nvrtcCompile(src, compileArch(h200tf.target), true);
  CHECK(p.ptx.find("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32") != std::string::npos);
  CHECK(p.ptx.find("cvt.rna.tf32.f32") != std::string::npos);
  CHECK(p.ptx.find("cp.async.cg.shared.global") != std::string::npos);
}
