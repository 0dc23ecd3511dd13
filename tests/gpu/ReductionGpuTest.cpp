// Reduction kernels on the GPU (codegen/ReduceSpec.h) against the float64 reference: the
// composites (softmax, log_softmax, RMSNorm, LayerNorm, residual add + RMSNorm) fused into one
// kernel, on rows that are not multiples of the vector width, N = 1, N = 262144, M = 1,
// inputs with NaN and infinities, every dtype; column and multi-axis reductions; then 1,000
// generated graphs with reductions, unfused and fused (quick mode: 40), in eight parts.
#include "GpuHarness.h"

#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Printer.h"
#include "ir/Random.h"
#include "passes/Fusion.h"
#include "runtime/Program.h"
#include "unit/RandomGraph.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <functional>

using namespace kfuse;
using namespace kfuse::gputest;

namespace {

struct Case {
  const char *name;
  std::function<void(Graph &, DType, int64_t, int64_t)> build;
};

const Case kCases[] = {
    {"softmax", [](Graph &g, DType t, int64_t m, int64_t n) { g.output(softmax(g.input("x", t, {m, n}))); }},
    {"log_softmax",
     [](Graph &g, DType t, int64_t m, int64_t n) { g.output(log_softmax(g.input("x", t, {m, n}))); }},
    {"rms_norm",
     [](Graph &g, DType t, int64_t m, int64_t n) {
       auto x = g.input("x", t, {m, n});
       g.output(rms_norm(x, g.input("w", t, {n}), 1e-6));
     }},
    {"layer_norm",
     [](Graph &g, DType t, int64_t m, int64_t n) {
       auto x = g.input("x", t, {m, n});
       g.output(layer_norm(x, g.input("w", t, {n}), g.input("b", t, {n}), 1e-5));
     }},
    {"add_rms_norm",
     [](Graph &g, DType t, int64_t m, int64_t n) {
       auto h = g.input("x", t, {m, n}) + g.input("r", t, {m, n});
       g.output(h);
       g.output(rms_norm(h, g.input("w", t, {n}), 1e-6));
     }},
};

size_t kernelCount(const Graph &g) {
  std::vector<int> seen;
  size_t lone = 0;
  for (const Node *n : g.nodes()) {
    if (n->isInput())
      continue;
    if (n->kernel() < 0)
      ++lone;
    else if (std::find(seen.begin(), seen.end(), n->kernel()) == seen.end())
      seen.push_back(n->kernel());
  }
  return seen.size() + lone;
}

} // namespace


TEST_CASE("reductions: softmax, norms and residual + norm are one kernel, every dtype and "
          "odd row",
          "[gpu][reduce]") {
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1},    {3, 7},     {5, 1000}, {2, 4096},
                                                {7, 1031}, {130, 33},  {1, 4096}, {64, 8192},
                                                {1, scaled(262144, 8192)}, {300, 24}};
  int checked = 0;
  for (const Case &c : kCases)
    for (DType t : {DType::F32, DType::BF16, DType::F16})
      for (auto [m, n] : shapes) {
        Graph g(c.name);
        c.build(g, t, m, n);
        fuseGraph(g);
        INFO(c.name << " " << dtypeName(t) << " [" << m << ", " << n << "]\n" << printGraph(g));
        CHECK(kernelCount(g) == 1);
        CHECK(runAndCheck(g, 17 + checked, false) == "");
        CHECK(runAndCheck(g, 31 + checked, true) == ""); // NaN and infinities among the inputs
        ++checked;
      }
  CHECK(checked == 5 * 3 * 10);
}

// A grid-stride kernel is launched as one wave. RMSNorm in f32 over rows of 1024 takes about
// 40 registers: 6 blocks of 256 threads per SM, not the 8 the compile-time bound counts, so
// the compiled grid would run a partial second wave; rows of 131072 run on clusters, of which
// fewer fit than SMs / cluster size.
TEST_CASE("reductions: grid-stride kernels launch one wave, what the device holds at once",
          "[gpu][reduce]") {
  runtime::Driver &d = runtime::Driver::require();
  struct C {
    DType t;
    int64_t m, n;
  };
  for (C c : {C{DType::F32, 16384, 1024}, C{DType::BF16, 256, scaled(131072, 32768)}}) {
    Graph g("rms");
    g.output(rms_norm(g.input("x", c.t, {c.m, c.n}), g.input("w", c.t, {c.n}), 1e-6));
    runtime::Program p(g);
    REQUIRE(p.module().kernels.size() == 1);
    const compiler::CompiledKernel &k = p.module().kernels[0];
    codegen::LaunchConfig run = p.executable().launchConfig(0);
    INFO(dtypeName(c.t) << " [" << c.m << ", " << c.n << "]: " << k.ptxas.registers
                        << " registers, compiled grid " << k.launch.grid << ", launched "
                        << run.grid << " x " << run.block << ", cluster " << run.cluster);
    CHECK(run.gridStride);
    CHECK(run.grid <= k.launch.grid);
    CHECK(run.grid >= run.cluster);
    CHECK(run.grid % run.cluster == 0);
    if (run.cluster == 1 && d.ccMajor == 9) {
      // sm_90's occupancy rule: registers allocated per warp in units of 256, 64K per SM,
      // at most 2048 threads and 32 blocks per SM (these kernels' shared memory is small).
      unsigned perWarp = (unsigned(k.ptxas.registers) * 32 + 255) / 256 * 256;
      unsigned byRegs = 65536 / (perWarp * (run.block / 32));
      unsigned perSm = std::min({byRegs, 2048 / run.block, 32u});
      CHECK(run.grid == std::min<uint64_t>(k.launch.grid, uint64_t(perSm) * unsigned(d.smCount)));
      CHECK(run.grid < k.launch.grid); // more than 32 registers: fewer than the bound
    }
    CHECK(runAndCheck(g, 41, false) == "");
  }
}

// Few long rows are split over CTAs across the grid (ReduceSpec::split), whose partials meet
// in a workspace: every composite and dtype, rows held in registers and rows read again per
// phase, a last share shorter than the others (odd lengths), with NaN and infinities. Then
// the same bits from stream launches and from several replays of one CUDA graph (the
// workspace's counters carry over from launch to launch).
TEST_CASE("reductions: few long rows split across the grid, launched cooperatively, the same "
          "bits on every run",
          "[gpu][reduce]") {
  const std::pair<int64_t, int64_t> shapes[] = {{1, scaled(1 << 22, 1 << 18)},
                                                {3, scaled(1000003, 100003)},
                                                {2, scaled(1 << 20, 1 << 18)}};
  int split = 0, checked = 0;
  for (const Case &c : kCases)
    for (DType t : {DType::F32, DType::BF16, DType::F16})
      for (auto [m, n] : shapes) {
        Graph g(c.name);
        c.build(g, t, m, n);
        runtime::Program p(g);
        REQUIRE(p.module().kernels.size() == 1);
        const codegen::ReduceSpec *r = p.module().kernels[0].spec.reduce();
        REQUIRE(r);
        codegen::LaunchConfig run = p.executable().launchConfig(0);
        INFO(c.name << " " << dtypeName(t) << " [" << m << ", " << n << "]: split " << r->split
                    << ", cached " << r->cache << ", launched " << run.grid << " x "
                    << run.block);
        if (r->split > 1) {
          ++split;
          CHECK(run.cooperative());
          CHECK(run.grid % r->split == 0);
          CHECK(run.grid == uint64_t(m) * r->split); // every row at once
        }
        CHECK(runAndCheck(g, 7 + checked, false) == "");
        CHECK(runAndCheck(g, 9 + checked, true) == "");
        std::vector<Tensor> inputs = randomInputs(g, 11 + checked);
        std::vector<Tensor> first = p.run(inputs, false);
        for (int rep = 0; rep < 3; ++rep) {
          std::vector<Tensor> again = p.run(inputs, true);
          REQUIRE(again.size() == first.size());
          for (size_t j = 0; j < again.size(); ++j)
            CHECK(again[j].data == first[j].data);
        }
        ++checked;
      }
  CHECK(checked == 5 * 3 * 3);
  CHECK(split >= 5 * 3 * 2); // quick mode's shorter rows too
}

// A cluster's rows staged in shared memory by the bulk copy engine, one row ahead
// (ReduceSpec::stage): more rows than the device holds clusters, so each CTA loops and its
// mbarrier goes through many phases; every composite, two staged inputs (residual +
// RMSNorm in bf16; in f32 its 128 KB are not staged), with NaN and infinities, and the
// same bits from a stream launch and a CUDA graph replay. 80 rows are about the fewest that
// stage on an H100 or H200 (more than 66 clusters of 8): no quick mode.
TEST_CASE("reductions: a cluster's rows staged in shared memory one row ahead, every "
          "composite",
          "[gpu][reduce]") {
  struct S {
    DType t;
    int64_t m, n;
    bool special; // also with NaN and infinities among the inputs
  };
  const S shapes[] = {{DType::BF16, 80, 131072, true}, {DType::F32, 80, 131072, false}};
  int staged = 0, checked = 0;
  for (const Case &c : kCases)
    for (S s : shapes) {
      Graph g(c.name);
      c.build(g, s.t, s.m, s.n);
      runtime::Program p(g);
      REQUIRE(p.module().kernels.size() == 1);
      const codegen::ReduceSpec *r = p.module().kernels[0].spec.reduce();
      REQUIRE(r);
      codegen::LaunchConfig run = p.executable().launchConfig(0);
      INFO(c.name << " " << dtypeName(s.t) << " [" << s.m << ", " << s.n << "]: stage "
                  << r->stage << " (" << r->stageBytes << " B), cluster " << r->cluster
                  << ", launched " << run.grid << " x " << run.block);
      if (r->stage) {
        ++staged;
        CHECK(run.sharedBytes == r->stageBytes);
        CHECK(run.grid / r->ctasPerRow() < uint64_t(s.m)); // CTAs loop
      }
      CHECK(runAndCheck(g, 51 + checked, false) == "");
      if (s.special)
        CHECK(runAndCheck(g, 53 + checked, true) == "");
      std::vector<Tensor> inputs = randomInputs(g, 57 + checked);
      std::vector<Tensor> first = p.run(inputs, false), again = p.run(inputs, true);
      REQUIRE(again.size() == first.size());
      for (size_t j = 0; j < again.size(); ++j)
        CHECK(again[j].data == first[j].data);
      ++checked;
    }
  CHECK(checked == 5 * 2);
  CHECK(staged == 5 + 4);
}

TEST_CASE("reductions: every op over columns, several axes, keepdims or not, broadcast back",
          "[gpu][reduce]") {
  int checked = 0;
  for (DType t : {DType::F32, DType::BF16})
    for (OpKind k : {OpKind::Sum, OpKind::Mean, OpKind::Amax, OpKind::Amin})
      for (const IntList &axes : {IntList{0}, IntList{-1}, IntList{0, 2}, IntList{1}, IntList{1, 2}})
        for (bool keep : {false, true}) {
          Graph g("r");
          auto x = g.input("x", t, {37, 5, 19});
          Value r = g.reduce(k, x, axes, keep);
          g.output(r);
          if (keep)
            g.output(x - r); // broadcast back over the reduced axes
          fuseGraph(g);
          INFO(opName(k) << " axes " << AttrValue(axes).str() << " keepdims " << keep << "\n"
                         << printGraph(g));
          CHECK(kernelCount(g) == 1);
          CHECK(runAndCheck(g, 5 + checked, checked % 3 == 0) == "");
          ++checked;
        }
  CHECK(checked == 2 * 4 * 5 * 2);
}

namespace {

/// Seeds [first, last) of the reduction differential: each graph run unfused and fused.
/// Returns the mismatches (the first few are reported with their graphs).
size_t reductionDifferential(uint64_t first, uint64_t last) {
  auto t0 = std::chrono::steady_clock::now();
  test::RandomGraphOptions o = test::elementwiseOptions();
  o.reductions = true;
  size_t runs = 0, mismatches = 0;
  for (uint64_t seed = first; seed < last; ++seed) {
    o.maxDim = seed % 10 == 9 ? 300 : 9;
    o.maxRank = seed % 10 == 9 ? 2 : 3;
    auto g = test::randomGraph(seed + 900000, o);
    for (bool fused : {false, true}) {
      ++runs;
      std::string m;
      try {
        auto h = g->clone();
        if (fused)
          fuseGraph(*h);
        m = runAndCheck(*h, seed, seed % 4 == 0);
      } catch (const Error &e) {
        m = std::string("error: ") + e.what();
      }
      if (m.empty())
        continue;
      ++mismatches;
      std::printf("GPU differential (reductions) mismatch: seed %llu %s: %s\n",
                  (unsigned long long)seed, fused ? "fused" : "unfused", m.c_str());
      if (mismatches <= 5)
        UNSCOPED_INFO("seed " << seed << (fused ? " fused" : " unfused") << ": " << m << "\n"
                              << printGraph(*g));
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("GPU differential (reductions), seeds %llu-%llu: %llu graphs, %zu runs, %zu "
              "mismatches, %.1f s\n",
              (unsigned long long)first, (unsigned long long)last - 1,
              (unsigned long long)(last - first), runs, mismatches, secs);
  return mismatches;
}

} // namespace

// 1,000 graphs (quick mode: 40) in eight test cases of consecutive seeds, so that
// tools/gpu_suite.sh runs them in parallel processes: one NVRTC compile per kernel and the
// float64 reference take CPU time, and one process ran out of a device call's time.
#define KF_REDUCTION_DIFFERENTIAL(part)                                                       \
  TEST_CASE("GPU differential: 1,000 generated graphs with reductions, unfused and fused, "   \
            "part " #part " of 8",                                                            \
            "[gpu][random][differential][reduce]") {                                          \
    const uint64_t total = static_cast<uint64_t>(scaled(1000, 40));                           \
    CHECK(reductionDifferential(total * (part - 1) / 8, total * part / 8) == 0);              \
  }
KF_REDUCTION_DIFFERENTIAL(1)
KF_REDUCTION_DIFFERENTIAL(2)
KF_REDUCTION_DIFFERENTIAL(3)
KF_REDUCTION_DIFFERENTIAL(4)
KF_REDUCTION_DIFFERENTIAL(5)
KF_REDUCTION_DIFFERENTIAL(6)
KF_REDUCTION_DIFFERENTIAL(7)
KF_REDUCTION_DIFFERENTIAL(8)
