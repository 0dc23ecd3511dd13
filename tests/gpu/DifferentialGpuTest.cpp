// GPU differential test: 1,000 generated elementwise graphs (tests/unit/RandomGraph.h, no
// matmul: the GPU has no matmul kernels yet) run on the device against the float64 reference
// (GpuHarness.h runAndCheck, the dtype tolerances of GPU.md), each both as given (one kernel
// per op) and fused by fuseGraph. Every fourth graph gets NaN/Inf inputs. A mismatch is
// shrunk (tests/unit/Shrink.h, predicate: runAndCheck still fails) and the .kf reproducer is
// printed and saved under $KFUSE_REPRO_DIR (default /tmp/kfuse-repro). Quick mode
// (KFUSE_GPU_QUICK, GpuHarness.h): 40 graphs, with the same mix.
#include "GpuHarness.h"

#include "ir/Error.h"
#include "ir/Printer.h"
#include "passes/Fusion.h"
#include "unit/RandomGraph.h"
#include "unit/Shrink.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>

using namespace kfuse;

namespace {

/// "" when `g` (fused first when `fused`) runs right on the GPU; errors count as failures.
std::string check(const Graph &g, bool fused, uint64_t seed, bool specials) {
  try {
    auto h = g.clone();
    if (fused)
      fuseGraph(*h);
    return gputest::runAndCheck(*h, seed, specials);
  } catch (const Error &e) {
    return std::string("error: ") + e.what();
  }
}

} // namespace

TEST_CASE("GPU differential: 1,000 generated elementwise graphs, unfused and fused, vs the "
          "reference",
          "[gpu][random][differential]") {
  auto t0 = std::chrono::steady_clock::now();
  test::RandomGraphOptions o = test::elementwiseOptions();
  size_t graphs = 0, runs = 0, ops = 0, mismatches = 0;
  const uint64_t total = static_cast<uint64_t>(gputest::scaled(1000, 40));
  for (uint64_t seed = 0; seed < total; ++seed) {
    // Mostly small tensors; every tenth graph has dims up to 200 so launches span many blocks.
    o.maxDim = seed % 10 == 9 ? 200 : 9;
    o.maxRank = seed % 10 == 9 ? 2 : 3;
    auto g = test::randomGraph(seed + 700000, o);
    bool specials = seed % 4 == 0;
    ++graphs;
    for (const Node *n : g->nodes())
      ops += !n->isInput();
    for (bool fused : {false, true}) {
      ++runs;
      std::string m = check(*g, fused, seed, specials);
      if (m.empty())
        continue;
      ++mismatches;
      auto stillFails = [&](const Graph &c) { return !check(c, fused, seed, specials).empty(); };
      test::ShrinkResult s = test::shrinkGraph(*g, stillFails, 600);
      std::string name = fmt::format("gpu-{}-{}", fused ? "fused" : "unfused", seed);
      std::string path =
          test::saveReproducer(*s.graph, name,
                               fmt::format("GPU vs reference ({}), seed {}, specials {}: {}",
                                           fused ? "fused" : "unfused", seed, specials, m),
                               test::reproducerDir());
      std::printf("GPU differential mismatch: seed %llu %s: %s\n", (unsigned long long)seed,
                  fused ? "fused" : "unfused", m.c_str());
      UNSCOPED_INFO("seed " << seed << (fused ? " fused" : " unfused") << ": " << m
                            << "\nshrunk reproducer " << path << " ("
                            << check(*s.graph, fused, seed, specials) << "):\n"
                            << printGraph(*s.graph));
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("GPU differential: %zu graphs, %zu ops, %zu runs (unfused + fused), %zu "
              "mismatches, %.1f s\n",
              graphs, ops, runs, mismatches, secs);
  CHECK(graphs == total);
  CHECK(mismatches == 0);
}
