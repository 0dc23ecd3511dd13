// The traffic model and the report, checked against the seed's worked numbers, read from
// the report itself (its plans, its text and its JSON).
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Verifier.h"
#include "analysis/Report.h"

#include <catch2/catch.hpp>

using namespace kfuse;

static bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

TEST_CASE("seed: x*2*3 on 1e9 f32 moves 16 GB unfused, 8 GB fused", "[traffic]") {
  Graph g("seed_mul");
  auto x = g.input("x", f32, {1000000000});
  g.output(x * 2.0 * 3.0);
  TrafficReport r = buildReport(g, parseTarget("seed"));
  CHECK(r.unfused.bytes() == 16000000000);
  CHECK(r.fused.bytes() == 8000000000);
  CHECK(r.unfused.launches() == 2);
  CHECK(r.fused.launches() == 1);
  CHECK(r.unfused.seconds * 1e3 == Approx(4.776).epsilon(1e-3));
  CHECK(r.fused.seconds * 1e3 == Approx(2.388).epsilon(1e-3));
  std::string text = formatReport(r);
  CHECK(contains(text, "16 GB moved"));
  CHECK(contains(text, "8 GB moved"));
  CHECK(contains(text, "4.78 ms"));
  CHECK(contains(text, "2.39 ms"));
  CHECK(contains(text, "ridge 591 FLOP/B"));
  CHECK(contains(text, "50.0%"));
  std::string json = reportJson(r);
  CHECK(contains(json, "\"bytes\": 16000000000"));
  CHECK(contains(json, "\"bytes\": 8000000000"));
  verify(g);
  verify(*r.fusedGraph);
}

TEST_CASE("seed: matmul + bias + relu moves 5O on the result unfused, O fused", "[traffic]") {
  const int64_t M = 512, N = 1024, K = 256;
  Graph g("mm_bias_relu");
  auto x = g.input("x", bf16, {M, K});
  auto w = g.input("w", bf16, {N, K});
  auto b = g.input("b", bf16, {N});
  g.output(relu(matmul(x, w, {.transB = true}) + b));
  TrafficReport r = buildReport(g, parseTarget("seed"));
  const int64_t O = M * N * 2, operands = (M * K + N * K + N) * 2;
  CHECK(r.unfused.bytes() - operands == 5 * O);
  CHECK(r.fused.bytes() - operands == O);
  CHECK(r.fused.launches() == 1);
  CHECK(r.unfused.launches() == 3);
  verify(*r.fusedGraph);
}

TEST_CASE("seed: a 4096^3 GEMM is 137.4 GFLOP, 0.07 ms at 1979 TFLOP/s", "[traffic]") {
  Graph g("gemm");
  auto a = g.input("a", bf16, {4096, 4096});
  auto b = g.input("b", bf16, {4096, 4096});
  g.output(matmul(a, b));
  TrafficReport r = buildReport(g, parseTarget("seed"));
  REQUIRE(r.fused.kernels.size() == 1);
  const KernelTraffic &k = r.fused.kernels[0];
  CHECK(k.flops == Approx(137.4e9).epsilon(1e-3));
  CHECK(k.computeBound);
  CHECK(k.seconds * 1e3 == Approx(0.0694).epsilon(1e-2));
  CHECK(contains(formatReport(r), "137.4 GFLOP"));
  CHECK(contains(formatReport(r), "compute"));
  verify(*r.fusedGraph);
}

TEST_CASE("seed: decode GEMM M=1 N=K=4096 is memory-bound at ~1 FLOP/B", "[traffic]") {
  Graph g("decode");
  auto x = g.input("x", bf16, {1, 4096});
  auto w = g.input("w", bf16, {4096, 4096});
  g.output(matmul(x, w, {.transB = true}));
  Target seed = parseTarget("seed");
  TrafficReport r = buildReport(g, seed);
  const KernelTraffic &k = r.fused.kernels.at(0);
  CHECK(k.flops == Approx(33.55e6).epsilon(1e-3));
  CHECK(w->type().numElements() == 16777216);
  CHECK(k.intensity() == Approx(1.0).epsilon(1e-2));
  CHECK(seed.ridge() == Approx(591).epsilon(1e-3));
  CHECK(!k.computeBound);
  CHECK(contains(formatReport(r), "memory"));
  verify(*r.fusedGraph);
}

TEST_CASE("the target model: one value with architecture, shared memory and a FLOP rate per dtype",
          "[traffic][target]") {
  Target h200 = parseTarget("h200");
  CHECK(h200.peakFlops(DType::BF16) == 790e12);
  CHECK(h200.peakFlops(DType::F16) == 790e12);
  CHECK(h200.peakFlops(DType::F32, /*tf32=*/true) == 395e12);
  CHECK(h200.peakFlops(DType::F32) == Approx(790e12 * 67 / 989));
  CHECK(h200.sharedPerBlock() == 227 * 1024);
  CHECK(targetFor(80, 108).sharedPerBlock() == 163 * 1024);
  // --arch changes what codegen targets, not the rates: a100's numbers on sm_80.
  Target a = withArch(parseTarget("a100:2.0:312"), "sm_80");
  CHECK(a.sm == 80);
  CHECK_FALSE(a.archSpecific);
  CHECK(a.bytesPerSecond == 2.0e12);
  CHECK(compileArch(a) == "sm_80");
  // The traffic model puts an exact-f32 matmul at the FFMA rate, a bf16 one at the tensor
  // rate: 4096^3 is compute-bound for both, 14.8x apart.
  auto mm = [](DType t) {
    Graph g("mm");
    g.output(matmul(g.input("a", t, {4096, 4096}), g.input("b", t, {4096, 4096})));
    return unfusedTraffic(g, parseTarget("h200")).seconds;
  };
  const double flops = 2.0 * 4096 * 4096 * 4096;
  CHECK(mm(DType::F32) == Approx(flops / (790e12 * 67 / 989) + 4e-6)); // + the fixed cost
  CHECK(mm(DType::BF16) == Approx(flops / 790e12 + 4e-6));
}

TEST_CASE("devices: h200, h100, a100, seed and NAME:BW:TFLOPs[:FIXED_us[:SMS]]", "[traffic]") {
  // Dense 16-bit rates of the data sheets, and the SMs and architecture of each.
  CHECK(parseTarget("h100").flopsPerSecond == 989e12);
  CHECK(parseTarget("h100").smCount == 132);
  CHECK(parseTarget("a100").sm == 80);
  CHECK(parseTarget("a100").smCount == 108);
  CHECK(compileArch(parseTarget("a100")) == "sm_80");
  CHECK(parseTarget("seed").flopsPerSecond == 1979e12);
  CHECK(parseTarget("l40s:0.864:362:4:142").smCount == 142);
  CHECK(parseTarget("x:1:1").smCount == 132);
  Target h200 = parseTarget("h200");
  CHECK(h200.bytesPerSecond == 4.19e12);
  CHECK(h200.flopsPerSecond == 790e12);
  CHECK(h200.kernelSeconds == 4e-6);
  CHECK(parseTarget("seed").kernelSeconds == 0); // not measured: the seed's roofline only
  Target u = parseTarget("a100:2.0:312");
  CHECK(u.name == "a100");
  CHECK(u.bytesPerSecond == 2.0e12);
  CHECK(u.ridge() == Approx(156));
  CHECK(u.kernelSeconds == 0);
  CHECK(parseTarget("a100:2.0:312:5").kernelSeconds == Approx(5e-6));
  CHECK(parseTarget("a100:2.0:312:0").kernelSeconds == 0);
  CHECK(parseTarget("a100:2.0:312:0.5").kernelSeconds == Approx(0.5e-6));
  REQUIRE_THROWS_WITH(parseTarget("b300"), Catch::Contains("NAME:BW_TBps:TFLOPs[:FIXED_us[:SMS]]"));
  for (const char *bad : {"x:0:1", "x:1:", "x:1:1:", "x:1:1:-2", "x:1:1:abc", "x:1:1:2:3.5",
                          "x:1:1:2:0", "x:1:1:2:3:4", ":1:1", "x:1:1:inf", "x:1:1:nan"}) {
    INFO(bad);
    REQUIRE_THROWS_AS(parseTarget(bad), Error);
  }
}

TEST_CASE("a plan's time is its kernels' as one CUDA graph: the first pays a kernel's fixed "
          "cost alone, each further one the graph's cost per kernel",
          "[traffic]") {
  // Six tanh kernels of 32 f32 each, unfused; one fused: the bytes are negligible.
  Graph g("chain");
  Value x = g.input("x", DType::F32, {32});
  for (int i = 0; i < 6; ++i)
    x = tanh(x);
  g.output(x);
  const Target h200 = parseTarget("h200");
  CHECK(h200.kernelSeconds == 4e-6);
  CHECK(h200.graphKernelSeconds == 0.9e-6);
  TrafficPlan u = unfusedTraffic(g, h200);
  REQUIRE(u.launches() == 6);
  double alone = 0;
  for (const KernelTraffic &k : u.kernels) {
    CHECK(k.seconds > 4e-6); // each kernel alone pays the whole fixed cost
    alone += k.seconds;
  }
  CHECK(u.seconds == Approx(alone - 5 * (4e-6 - 0.9e-6)));
  CHECK(u.seconds == Approx(4e-6 + 5 * 0.9e-6).epsilon(0.01));
  CHECK(h200.graphSeconds(7e-6, 1) == 7e-6);
  CHECK(h200.graphSeconds(0, 0) == 0);
  // h100: its own measured costs (4 us alone, 1.1 us further); seed: none; a custom
  // device's, paid by every kernel (not measured).
  CHECK(unfusedTraffic(g, parseTarget("h100")).seconds == Approx(4e-6 + 5 * 1.1e-6).epsilon(0.01));
  CHECK(unfusedTraffic(g, parseTarget("seed")).seconds < 1e-7);
  Target custom = parseTarget("x:1:1:3");
  CHECK(custom.graphKernelSeconds == custom.kernelSeconds);
  CHECK(unfusedTraffic(g, custom).seconds == Approx(6 * 3e-6).epsilon(0.01));
}

TEST_CASE("a broadcast operand counts its own size; fused kernels read externals once",
          "[traffic]") {
  Graph g;
  auto x = g.input("x", f32, {100, 10});
  auto b = g.input("b", f32, {10});
  auto y = x + b;
  auto z = y * x;
  g.output(z);
  Target d = parseTarget("seed");
  TrafficPlan u = unfusedTraffic(g, d);
  CHECK(u.kernels[0].bytesRead == 4000 + 40);
  CHECK(u.kernels[1].bytesRead == 8000);
  CHECK(u.bytes() == 4040 + 4000 + 8000 + 4000);
  TrafficReport r = buildReport(g, d);
  CHECK(r.fused.bytes() == 4040 + 4000);
  CHECK(formatBytes(33554432) == "33.6 MB");
  CHECK(formatSeconds(2.388e-3) == "2.39 ms");
  verify(g);
}
