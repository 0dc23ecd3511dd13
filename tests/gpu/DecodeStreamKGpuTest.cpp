// The decode GEMM's stream-K grid (issue 17; an autotune candidate the heuristic never
// picks): every CTA an equal contiguous range of the (column tile, k tile) units, a column
// tile cut between CTAs summed in a workspace by the last CTA to arrive. Model layers with
// the stream-K candidate chosen by a tuning, replayed as a CUDA graph (each tile's counter
// must be back at 0 for the next launch) and bit-compared with a fresh executable's single
// launch (the shares are summed in CTA order, never in arrival order). Stream-K grids of 2
// and 7 CTAs on odd shapes are in AutotuneGpuTest.
#include "GemmHarness.h"

#include "codegen/DecodeGemm.h"
#include "codegen/GemmTuning.h"
#include "codegen/KernelSpec.h"
#include "runtime/Driver.h"
#include "runtime/Program.h"

#include <catch2/catch.hpp>

using namespace kfuse;
using namespace kfuse::gputest;
using runtime::Driver;

TEST_CASE("GEMM: the decode kernel's stream-K grid on model layers, replayed, the same bits",
          "[gpu][gemm][decode]") {
  Driver &d = Driver::require();
  if (d.ccMajor < 8)
    return; // no decode kernel
  const Target t = runtime::deviceTarget(d);
  struct Layer {
    int64_t N, K;
  };
  // Llama-3-8B's gate_proj 4096 -> 14336 (224 column tiles of 16 k tiles on 132 SMs: 27-28
  // units each), Gemma-7B's down_proj 24576 -> 3072 (48 tiles of 96 k tiles: a tile over
  // 3-4 CTAs), GPT-2-XL's c_proj 6400 -> 1600 (25 tiles of 25 k tiles), + bias + relu.
  int run = 0;
  for (Layer l : {Layer{14336, 4096}, Layer{3072, 24576}, Layer{1600, 6400}})
    for (int64_t M : {1, 16})
      for (bool tb : {false, true}) {
        auto g = gemmGraph(DType::BF16, {M, l.K}, tb ? Shape{l.N, l.K} : Shape{l.K, l.N},
                           {false, tb}, Epi::BiasRelu);
        auto specs = codegen::buildKernelSpecs(*g, t);
        REQUIRE(specs[0].gemm());
        codegen::GemmTuning tuning;
        for (const codegen::GemmSpec &c : codegen::gemmCandidates(*specs[0].gemm(), t))
          if (c.streamK)
            tuning.byProblem[codegen::gemmProblemKey(*specs[0].gemm(), t)] = {c.describe(), "test"};
        REQUIRE(tuning.byProblem.size() == 1);
        RunResult r = runOnGpu(*g, 5000 + run, /*graphReplay=*/true, true, &tuning, false,
                               /*launches=*/3);
        REQUIRE(r.specs[0].gemm());
        const codegen::GemmSpec &s = *r.specs[0].gemm();
        INFO("M=" << M << " N=" << l.N << " K=" << l.K << " transB=" << tb << " " << s.describe());
        CHECK(s.streamK);
        CHECK(checkSampled(*g, r, 2000, 5100 + run) == "");
        RunResult once = runOnGpu(*g, 5000 + run, false, true, &tuning);
        REQUIRE(once.outputs.size() == 1);
        CHECK(once.outputs[0].bytes == r.outputs[0].bytes);
        ++run;
      }
}
