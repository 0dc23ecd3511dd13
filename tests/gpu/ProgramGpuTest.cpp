// The C++ API (runtime::Program) on the GPU: every example graph planned fused and
// unfused, run as one CUDA graph and as stream launches, and checked against the reference
// interpreter; a warm run (disk cache hit, as in a new process) spends under 5 ms in
// compile and load. Quick mode (KFUSE_GPU_QUICK, GpuHarness.h): only the examples the
// interpreter checks run (the others are 2^24 to 10^9 elements), each named in a WARN.
#include "GpuHarness.h"

#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Interpreter.h"
#include "ir/Parser.h"
#include "ir/Random.h"
#include "analysis/Traffic.h"
#include "compiler/Dump.h"
#include "compiler/KernelCache.h"
#include "ir/Compare.h"
#include "runtime/DeviceTensor.h"
#include "runtime/Program.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fmt/core.h>
#include <unistd.h>

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

TEST_CASE("a warm run of every example spends under 5 ms in compile and load", "[gpu][cache][timing]") {
  for (const fs::path &file : exampleFiles())
    for (const auto &g : parseFile(file.string()))
      try {
        { runtime::Program cold(*g); } // compiles, or finds the entry on disk
        compiler::clearMemoryCache();   // as a new process starts
        runtime::Program warm(*g);
        INFO(file.filename().string() << " graph " << g->name());
        fmt::print("warm compile+load {:<28} {:6.2f} ms ({} disk hit, {} compiles)\n", g->name(),
                   warm.compileLoadMs(), warm.cacheUse().diskHits, warm.cacheUse().compiles);
        CHECK(warm.cacheUse().compiles == 0);
        CHECK(warm.cacheUse().diskHits == warm.numKernels()); // one entry per kernel
        CHECK(warm.compileLoadMs() < 5.0);
      } catch (const Error &e) {
        FAIL_CHECK(file.filename().string() << " graph " << g->name() << ": " << e.what());
      }
}

// The driver's module is a plain value: compiled once, it is loaded and run, reported and
// dumped, and none of that compiles again.
TEST_CASE("a module compiled once runs, reports and dumps without compiling again",
          "[gpu][compile]") {
  runtime::Driver &d = runtime::Driver::require();
  auto g = parseFile((fs::path(KFUSE_SOURCE_DIR) / "examples" / "graphs" / "mlp.kf").string());
  compiler::CompiledModule m = compiler::compile(*g[0], runtime::deviceOptions(d));
  REQUIRE(m.kernels.size() == 1);
  compiler::CacheStats before = compiler::cacheStatsSnapshot();
  std::vector<Tensor> inputs = randomInputs(*g[0], 7);
  std::vector<runtime::DeviceBuffer> in, out;
  std::vector<CUdeviceptr> inPtr, outPtr;
  for (const Tensor &t : inputs) {
    in.push_back(runtime::upload(t));
    inPtr.push_back(in.back().ptr());
  }
  for (const Node *n : m.plan->outputs()) {
    out.emplace_back(static_cast<size_t>(n->type().bytes()));
    out.back().poison();
    outPtr.push_back(out.back().ptr());
  }
  runtime::Executable exe(d, m);
  exe.captureGraph(inPtr, outPtr);
  exe.replay(nullptr);
  d.check(d.cuCtxSynchronize(), "running the module");
  std::vector<unsigned> stored;
  for (const compiler::CompiledKernel &k : m.kernels)
    for (const codegen::SpecOutput &o : k.spec.outputs)
      stored.push_back(o.tensor.nodeId);
  std::vector<Tensor> ref = interpret(*m.plan, inputs, stored);
  for (size_t j = 0; j < ref.size(); ++j) {
    Tensor got = runtime::download(m.plan->outputs()[j]->type(), outPtr[j]);
    CHECK(compareValues(got.data, ref[j].data, Tolerance::of(DType::BF16, 16)) == "");
  }
  fs::path dir = fs::temp_directory_path() / fmt::format("kfuse-module-dump-{}", ::getpid());
  compiler::writeDump(m, dir.string());
  CHECK(fs::file_size(dir / "mlp" / "kernels" / "kf0_k0.cu") == m.kernels[0].source.size());
  CHECK(compiler::kernelsJson(m).find("\"registers\": ") != std::string::npos);
  compiler::CacheStats after = compiler::cacheStatsSnapshot();
  CHECK(after.compiles == before.compiles);
  CHECK(after.diskHits == before.diskHits);
  CHECK(after.memoryHits == before.memoryHits);
  fs::remove_all(dir);
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

// Kernels of the same code are compiled once and launched through one function
// (compiler/SameCode.h): three layers of x = tanh(gelu(x W^T + b) + x) * 0.5, each a GEMM
// kernel with its own weights (the last one's epilogue adds 1: its own code), beside each an
// elementwise kernel on another tensor; graph and stream launches against the interpreter.
TEST_CASE("kernels of the same code share one function and compute their own tensors",
          "[gpu]") {
  Graph g("layers");
  Value x = g.input("x", DType::BF16, {200, 256});
  for (int l = 0; l < 3; ++l) {
    Value w = g.input("w" + std::to_string(l), DType::BF16, {256, 256});
    Value b = g.input("b" + std::to_string(l), DType::BF16, {256});
    Value h = gelu_tanh(matmul(x, w, {false, true}) + b);
    x = tanh(l == 2 ? (h + x) + 1.0 : h + x) * 0.5;
    g.output(silu(g.input("s" + std::to_string(l), DType::F32, {5000})) * 2.0);
  }
  g.output(x);
  runtime::Program p(g);
  int shared = 0;
  for (const compiler::CompiledKernel &k : p.module().kernels)
    shared += k.sameCodeAs >= 0 ? 1 : 0;
  CHECK(p.module().kernels.size() == 6);
  CHECK(shared == 3); // the second layer's GEMM, two of the elementwise kernels
  std::vector<Tensor> inputs = randomInputs(g, 7);
  std::vector<Tensor> viaGraph = p.run(inputs, true);
  std::vector<Tensor> viaStream = p.run(inputs, false);
  for (size_t j = 0; j < viaGraph.size(); ++j)
    CHECK(viaGraph[j].data == viaStream[j].data);
  CHECK(p.check(inputs, viaGraph) == "");
  // The elementwise outputs are three different tensors, not one written three times.
  CHECK(viaGraph[0].data != viaGraph[1].data);
  CHECK(viaGraph[1].data != viaGraph[2].data);
}
