// Differential test of the passes against the reference interpreter on >= 1000 random graphs
// (tests/unit/RandomGraph.h): cse, dce and fuse must not change any output bit; the full -O2
// pipeline (simplify folds literals and drops identities) may change the last bits only.
#if __has_include("ir/Interpreter.h")
#include "RandomGraph.h"

#include "ir/Interpreter.h"
#include "ir/Random.h"
#include "ir/Verifier.h"
#include "passes/PassManager.h"

#include <catch2/catch.hpp>
#include <cmath>

using namespace kfuse;

namespace {

std::vector<Tensor> runPipeline(const Graph &g, const std::vector<std::string> &passes,
                                llvm::ArrayRef<Tensor> inputs) {
  auto opt = g.clone();
  PassManagerOptions o;
  o.verifyEach = true;
  PassManager pm(o);
  pm.addPipeline(passes);
  pm.run(*opt);
  verify(*opt);
  return interpret(*opt, inputs);
}

bool same(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

bool close(double a, double b, DType t) {
  if (same(a, b))
    return true;
  if (!std::isfinite(a) || !std::isfinite(b))
    return false;
  double tol = t == DType::F32 ? 1e-4 : 3e-2;
  return std::fabs(a - b) <= tol * std::max(1.0, std::max(std::fabs(a), std::fabs(b)));
}

} // namespace

TEST_CASE("random graphs: fusion keeps interpreter results bit for bit, -O2 within rounding",
          "[random][interpret]") {
  const std::vector<std::string> noSimplify = {"cse", "dce", "fuse"};
  size_t compared = 0;
  for (uint64_t seed = 0; seed < 1200; ++seed) {
    INFO("seed " << seed);
    auto g = test::randomGraph(seed);
    std::vector<Tensor> inputs = randomInputs(*g, seed);
    std::vector<Tensor> ref = interpret(*g, inputs);
    std::vector<Tensor> fused = runPipeline(*g, noSimplify, inputs);
    std::vector<Tensor> full = runPipeline(*g, defaultPipeline(), inputs);
    REQUIRE(ref.size() == fused.size());
    REQUIRE(ref.size() == full.size());
    for (size_t i = 0; i < ref.size(); ++i) {
      INFO("output " << i << " " << ref[i].type.str());
      REQUIRE(fused[i].type == ref[i].type);
      REQUIRE(full[i].type == ref[i].type);
      for (size_t j = 0; j < ref[i].data.size(); ++j) {
        INFO("element " << j << ": " << ref[i].data[j] << " vs " << fused[i].data[j] << " / "
                        << full[i].data[j]);
        REQUIRE(same(ref[i].data[j], fused[i].data[j]));
        REQUIRE(close(ref[i].data[j], full[i].data[j], ref[i].dtype()));
        ++compared;
      }
    }
  }
  CHECK(compared > 10000);
}
#endif
