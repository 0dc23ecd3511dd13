// Sibling matmuls as one kernel (issue 17): two products of the same A per tile, joined in
// the epilogue (SwiGLU's silu(x Wg^T) * (x Wu^T)), neither stored unless the graph reads it
// elsewhere. Every layout, shapes off every tile, f16 and bf16, every dual configuration the
// autotuner may pick, against the interpreter.
#include "GemmHarness.h"

#include "compiler/Compile.h"
#include "ir/Builder.h"
#include "passes/PassManager.h"
#include "runtime/Program.h"

#include <catch2/catch.hpp>

using namespace kfuse;
using namespace kfuse::gputest;
using runtime::Driver;

namespace {

enum class Join { SwiGlu, GeluMulBias, ProductsStored };

/// join(x B1, x B2) for x [M, K] (A^T: [K, M]) and B1, B2 [K, N] (trans_b: [N, K]), fused by
/// the -O2 pipeline with the device's sibling policy.
std::unique_ptr<Graph> siblingGraph(const Driver &d, DType t, int64_t M, int64_t N, int64_t K,
                                    MatMulAttrs attrs, Join join) {
  auto g = std::make_unique<Graph>("sibling");
  Value x = g->input("x", t, attrs.transA ? Shape{K, M} : Shape{M, K});
  Shape sb = attrs.transB ? Shape{N, K} : Shape{K, N};
  Value gate = matmul(x, g->input("wg", t, sb), attrs);
  Value up = matmul(x, g->input("wu", t, sb), attrs);
  switch (join) {
  case Join::SwiGlu:
    g->output(silu(gate) * up);
    break;
  case Join::GeluMulBias:
    g->output(gelu(gate) * up + g->input("bias", t, {N}));
    break;
  case Join::ProductsStored: // both products also leave the kernel
    g->output(silu(gate) * up);
    g->output(up);
    g->output(gate);
    break;
  }
  PassManagerOptions popts;
  popts.siblingGemm = codegen::siblingGemmPolicy(runtime::deviceTarget(d));
  PassManager pm(popts);
  pm.addPipeline(defaultPipeline());
  pm.run(*g);
  return g;
}

void checkOne(const Driver &d, DType t, int64_t M, int64_t N, int64_t K, MatMulAttrs attrs,
              Join join, uint64_t seed, const codegen::GemmTuning *tuning = nullptr,
              bool graphReplay = false) {
  auto g = siblingGraph(d, t, M, N, K, attrs, join);
  RunResult r = runOnGpu(*g, seed, graphReplay, true, tuning);
  REQUIRE(r.specs.size() == 1);
  REQUIRE(r.specs[0].gemm());
  const codegen::GemmSpec &s = *r.specs[0].gemm();
  INFO(dtypeName(t) << " M=" << M << " N=" << N << " K=" << K << " transA=" << attrs.transA
                    << " transB=" << attrs.transB << " join=" << int(join) << " "
                    << s.describe());
  CHECK(s.dual);
  CHECK(s.kernel == codegen::GemmKernel::Wgmma);
  // silu(g) * u: u's accumulation error scales with silu(g), which the forward error bound
  // carries (a fixed tolerance per K does not: 6 f16 steps at K = 200 where |g| ~ 10).
  CHECK(checkWithErrorBound(*g, r) == "");
}

} // namespace

TEST_CASE("Sibling GEMM: two products per tile, every layout, tile edges, f16/bf16",
          "[gpu][gemm][wgmma][sibling]") {
  Driver &d = Driver::require();
  if (!wgmmaDevice(d))
    return;
  struct Case {
    int64_t M, N, K;
  };
  // M above the decode kernel's 16; M, N, K off the 64/128 tiles and the 64-element k step,
  // K from one partial k step to many rounds of the ring; rows of 8-element multiples (TMA).
  const std::vector<Case> cases = {{304, 200, 72}, {24, 8, 8},      {72, 264, 16},
                                   {136, 520, 200}, {1000, 256, 64}, {256, 1024, 4096}};
  int run = 0;
  for (const Case &c : cases)
    for (int tr = 0; tr < 4; ++tr, ++run)
      checkOne(d, run % 2 ? DType::F16 : DType::BF16, c.M, c.N, c.K, {bool(tr & 1), bool(tr & 2)},
               static_cast<Join>(run % 3), 1700 + run);
  // Odd N with B as [N, K] (the staged epilogue's row ends), and as one CUDA graph.
  checkOne(d, DType::BF16, 200, 77, 64, {false, true}, Join::SwiGlu, 1790);
  checkOne(d, DType::F16, 136, 261, 136, {true, true}, Join::ProductsStored, 1791);
  checkOne(d, DType::BF16, 520, 392, 200, {false, true}, Join::GeluMulBias, 1792, nullptr, true);
}

// Every dual configuration the autotuner may choose (BN 64 or 128, one or two consumer
// warpgroups, 3-8 stages as fit), on 1800 x 2600 x 200: partial tiles on both edges, several
// tiles per CTA, the ring wrapping across tiles.
TEST_CASE("Sibling GEMM: every dual wgmma candidate", "[gpu][gemm][wgmma][sibling]") {
  Driver &d = Driver::require();
  if (!wgmmaDevice(d))
    return;
  const Target t = runtime::deviceTarget(d);
  auto g = siblingGraph(d, DType::BF16, 1800, 2600, 200, {false, true}, Join::SwiGlu);
  auto specs = codegen::buildKernelSpecs(*g, t);
  REQUIRE(specs.size() == 1);
  REQUIRE(specs[0].gemm());
  const codegen::GemmSpec chosen = *specs[0].gemm();
  std::vector<codegen::GemmSpec> candidates = codegen::gemmCandidates(chosen, t);
  CHECK(candidates.size() >= 8);
  int i = 0;
  for (const codegen::GemmSpec &c : candidates) {
    codegen::GemmTuning tuning;
    tuning.byProblem[codegen::gemmProblemKey(chosen, t)] = {c.describe(), "test"};
    INFO("candidate " << c.describe());
    CHECK(c.dual);
    for (int tr = 0; tr < 4; tr += 3) // K-major both, and both M/N-major
      checkOne(d, tr ? DType::F16 : DType::BF16, 1800, 2600, 200, {bool(tr & 1), bool(tr & 2)},
               Join::SwiGlu, 1800 + 10 * i + tr, &tuning);
    ++i;
  }
}
