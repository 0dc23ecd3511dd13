// The Hopper GEMM's long epilogue (issue 17): an epilogue whose code weight reaches
// codegen/GemmCodegen.h's epilogueRolled runs as a loop over accumulators staged in shared
// memory, not written out for each value. Every layout, tiles cut by M and N (odd N, N past
// a 32-column chunk by 1..7), f16 and bf16, the cooperative, ping-pong and 2-CTA cluster
// kernels, against the interpreter.
#include "GemmHarness.h"

#include "codegen/GemmCodegen.h"
#include "codegen/GemmSpec.h"
#include "codegen/GemmTuning.h"
#include "codegen/KernelSpec.h"
#include "ir/Builder.h"
#include "runtime/Program.h"

#include <catch2/catch.hpp>

using namespace kfuse;
using namespace kfuse::gputest;
using runtime::Driver;

namespace {

/// bench/epilogue/run.py's 20 ops after h: a bias, GELU with tanh and pow written out, a
/// sigmoid gate, exp then log, relu, abs, sqrt and a division.
std::unique_ptr<Graph> longEpilogueGraph(DType t, int64_t M, int64_t N, int64_t K,
                                         MatMulAttrs attrs) {
  auto g = std::make_unique<Graph>("long_epilogue");
  Value a = g->input("a", t, attrs.transA ? Shape{K, M} : Shape{M, K});
  Value b = g->input("b", t, attrs.transB ? Shape{N, K} : Shape{K, N});
  Value h1 = matmul(a, b, attrs) + g->input("bias", t, {N});
  Value s2 = (h1 + pow(h1, 3.0) * 0.044715) * 0.7978845608;
  Value gl = h1 * ((tanh(s2) + 1.0) * 0.5);
  Value sg = sigmoid(h1);
  Value l = log(exp(sg));
  Value q = sqrt(abs(-(relu(gl * sg) + l)));
  g->output(q / 3.0 - 0.25);
  fuseGraph(*g);
  return g;
}

void checkOne(DType t, int64_t M, int64_t N, int64_t K, MatMulAttrs attrs, uint64_t seed,
              const codegen::GemmTuning *tuning = nullptr) {
  auto g = longEpilogueGraph(t, M, N, K, attrs);
  RunResult r = runOnGpu(*g, seed, false, true, tuning);
  REQUIRE(r.specs.size() == 1);
  REQUIRE(r.specs[0].gemm());
  INFO(dtypeName(t) << " M=" << M << " N=" << N << " K=" << K << " transA=" << attrs.transA
                    << " transB=" << attrs.transB << " " << r.specs[0].gemm()->describe());
  CHECK(r.specs[0].gemm()->kernel == codegen::GemmKernel::Wgmma);
  CHECK(codegen::epilogueRolled(r.specs[0]));
  CHECK(checkWithInterpreter(*g, r) == "");
}

} // namespace

TEST_CASE("GEMM: a long epilogue runs as a loop over staged accumulators, every layout and "
          "tile edge",
          "[gpu][gemm][wgmma][epilogue]") {
  if (!wgmmaDevice(Driver::require()))
    return;
  struct Case {
    int64_t M, N, K;
  };
  int run = 0;
  for (Case c : std::vector<Case>{{304, 200, 72}, {72, 264, 16}, {136, 520, 200}, {1000, 256, 64}})
    for (int tr = 0; tr < 4; ++tr, ++run)
      checkOne(run % 2 ? DType::F16 : DType::BF16, c.M, c.N, c.K, {bool(tr & 1), bool(tr & 2)},
               1300 + run);
  // B as [N, K] leaves N free: odd N, N past a 32-column chunk by 5 and a single column,
  // where the row ends are stored element by element.
  for (Case c : std::vector<Case>{{200, 77, 64}, {136, 261, 136}, {72, 1, 24}})
    for (int ta = 0; ta < 2; ++ta, ++run)
      checkOne(run % 2 ? DType::F16 : DType::BF16, c.M, c.N, c.K, {bool(ta), true}, 1300 + run);
}

// Every wgmma configuration the autotuner may pick that differs in how the epilogue runs:
// 128- and 256-column tiles, ping-pong (each consumer both 64-row halves of its tiles) and
// 2-CTA clusters, on 1800 x 2600 (15 x 21 tiles of 128, both edges partial).
TEST_CASE("GEMM: a long epilogue in the ping-pong and cluster kernels",
          "[gpu][gemm][wgmma][epilogue]") {
  Driver &d = Driver::require();
  if (!wgmmaDevice(d))
    return;
  const Target target = runtime::deviceTarget(d);
  const int64_t M = 1800, N = 2600, K = 200;
  struct Pick {
    unsigned bn, cluster;
    bool pp;
  };
  int run = 0;
  for (Pick p : std::vector<Pick>{{256, 1, false}, {128, 1, true}, {128, 2, false}, {128, 2, true}})
    for (int tr = 0; tr < 4; tr += 3, ++run) { // A [M, K] and B [K, N]; A^T and B as [N, K]
      const DType t = run % 2 ? DType::F16 : DType::BF16;
      const MatMulAttrs attrs{bool(tr & 1), bool(tr & 2)};
      auto g = longEpilogueGraph(t, M, N, K, attrs);
      auto specs = codegen::buildKernelSpecs(*g, target);
      REQUIRE(specs.size() == 1);
      REQUIRE(specs[0].gemm());
      codegen::GemmTuning tuning;
      for (const codegen::GemmSpec &c : codegen::gemmCandidates(*specs[0].gemm(), target))
        if (c.bn == p.bn && c.cluster == p.cluster && c.pingpong == p.pp && c.stages == 4)
          tuning.byProblem[codegen::gemmProblemKey(*specs[0].gemm(), target)] = {c.describe(),
                                                                                "test"};
      INFO("BN=" << p.bn << " cluster=" << p.cluster << " ping-pong=" << p.pp);
      REQUIRE(tuning.byProblem.size() == 1);
      checkOne(t, M, N, K, attrs, 1400 + run, &tuning);
    }
}
