// The C++ API (runtime::Program) on the GPU: every example graph planned fused and
// unfused, run as one CUDA graph and as stream launches, and checked against the reference
// interpreter; a warm run (disk cache hit, as in a new process) spends under 5 ms in
// compile and load. Quick mode (KFUSE_GPU_QUICK, GpuHarness.h): only the examples the
// interpreter checks run (the others are 2^24 to 10^9 elements), each named in a WARN.
#include "GpuHarness.h"

#include "ir/Error.h"
#include "ir/Interpreter.h"
#include "ir/Parser.h"
#include "ir/Random.h"
#include "passes/Traffic.h"
#include "runtime/KernelCache.h"
#include "runtime/Program.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fmt/core.h>

using namespace kfuse;
namespace fs = std::filesystem;

namespace {
std::vector<fs::path> exampleFiles() {
  std::vector<fs::path> files;
  for (const auto &e : fs::directory_iterator(fs::path(KFUSE_SOURCE_DIR) / "examples" / "graphs"))
    if (e.path().extension() == ".kf")
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

/// Whether the float64 interpreter can check `g` in about a second: every tensor at most
/// 2^24 elements and at most ~8 GFLOP of matmul. (`kfuse run --check` checks the larger
/// examples, e.g. gelu_bias at 2^28 elements, in the device benchmark script.)
bool interpretable(const Graph &g) {
  double matmulFlops = 0;
  for (const Node *n : g.nodes()) {
    if (n->type().numElements() > (int64_t(1) << 24))
      return false;
    if (n->kind() == OpKind::MatMul)
      matmulFlops += nodeFlops(n);
  }
  return matmulFlops <= 8e9;
}
} // namespace

TEST_CASE("every example graph: fused and unfused, graph and stream launches, vs the interpreter",
          "[gpu][examples]") {
  int checked = 0, ranOnly = 0;
  for (const fs::path &file : exampleFiles()) {
    for (const auto &g : parseFile(file.string())) {
      bool check = interpretable(*g);
      if (!check && gputest::quickMode()) {
        WARN("KFUSE_GPU_QUICK: skipped example " << file.filename().string() << " graph "
                                                 << g->name() << " (too large to check)");
        continue;
      }
      std::vector<Tensor> inputs = randomInputs(*g, 42);
      for (bool fuse : {true, false})
        try {
          INFO(file.filename().string()
               << " graph " << g->name() << (fuse ? " fused" : " unfused"));
          runtime::Program p(*g, {.fuse = fuse});
          std::vector<Tensor> viaGraph = p.run(inputs, true);
          std::vector<Tensor> viaStream = p.run(inputs, false);
          REQUIRE(viaGraph.size() == g->outputs().size());
          for (size_t j = 0; j < viaGraph.size(); ++j)
            CHECK(viaGraph[j].data == viaStream[j].data); // the same kernels, bit for bit
          if (check) {
            CHECK(p.check(inputs, viaGraph) == "");
            ++checked;
          } else {
            for (const Tensor &t : viaGraph) // at least: every element written, none poisoned
              CHECK(tensorStats(t).nans == 0);
            ++ranOnly;
          }
        } catch (const Error &e) { // one example that cannot run must not hide the others
          FAIL_CHECK(file.filename().string() << " graph " << g->name() << ": " << e.what());
        }
    }
  }
  fmt::print(
      "examples: {} plans checked against the interpreter, {} run without a check (too large)\n",
      checked, ranOnly);
  CHECK(checked >= 6);
}

TEST_CASE("a warm run of every example spends under 5 ms in compile and load", "[gpu][cache]") {
  for (const fs::path &file : exampleFiles())
    for (const auto &g : parseFile(file.string()))
      try {
        { runtime::Program cold(*g); } // compiles, or finds the entry on disk
        runtime::clearMemoryCache();   // as a new process starts
        runtime::Program warm(*g);
        INFO(file.filename().string() << " graph " << g->name());
        fmt::print("warm compile+load {:<28} {:6.2f} ms ({} disk hit, {} compiles)\n", g->name(),
                   warm.compileLoadMs(), warm.cacheUse().diskHits, warm.cacheUse().compiles);
        CHECK(warm.cacheUse().compiles == 0);
        CHECK(warm.cacheUse().diskHits == 1);
        CHECK(warm.compileLoadMs() < 5.0);
      } catch (const Error &e) {
        FAIL_CHECK(file.filename().string() << " graph " << g->name() << ": " << e.what());
      }
}

TEST_CASE("Program::check finds a wrong output", "[gpu]") {
  auto module = parseModule(
      "graph g {\n  %x = input f32[1000]\n  %y = mul %x, 3.0\n  output %y\n}\n", "inline.kf");
  runtime::Program p(*module[0]);
  std::vector<Tensor> in = randomInputs(*module[0], 1);
  std::vector<Tensor> out = p.run(in);
  CHECK(p.check(in, out) == "");
  out[0].data[517] += 1e-3;
  CHECK(p.check(in, out).find("element 517") != std::string::npos);
}
