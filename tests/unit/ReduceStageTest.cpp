// A cluster's rows staged in shared memory one row ahead (ReduceSpec::stage,
// codegen/ReduceStage.h): which reduce kernels stage their rows, what they ask of the launch,
// and the order of the staged loop's steps in the CUDA C (the GPU suite checks the numbers:
// tests/gpu/ReductionGpuTest.cpp, "a cluster's rows staged in shared memory").
#include "codegen/CudaCodegen.h"
#include "codegen/KernelEmitter.h"
#include "codegen/KernelSpec.h"
#include "compiler/Compile.h"
#include "unit/EveryComposite.h"
#include "ir/Builder.h"
#include "ir/Verifier.h"
#include "passes/Fusion.h"

#include <catch2/catch.hpp>

using namespace kfuse;
using namespace kfuse::codegen;

namespace {
KernelSpec softmaxSpec(DType t, int64_t m, int64_t n) {
  Graph g("softmax");
  g.output(softmax(g.input("x", t, {m, n})));
  fuseGraph(g);
  verify(g);
  std::vector<KernelSpec> specs = buildKernelSpecs(g);
  REQUIRE(specs.size() == 1);
  REQUIRE(specs[0].reduce());
  return specs[0];
}
} // namespace

TEST_CASE("reduce specs: a cluster's rows are staged where each CTA takes several rows, whose "
          "shares start on 16 bytes, in at most 64 KB",
          "[reduce][codegen]") {
  struct C {
    DType t;
    int64_t m, n;
    bool stage;
    unsigned bytes; // per CTA
  };
  // The default target: 132 SMs, sm_90a.
  for (C c : {C{bf16, 4096, 131072, true, 16384 * 2}, // a cluster of 8: one row's share
              C{f32, 4096, 131072, true, 16384 * 4},
              C{f16, 200, 65536, true, 16384 * 2},   // a cluster of 4
              // One CTA per row or several rows per CTA: the SM's other CTAs already
              // overlap one's loads with another's phases (8192: 9-12% slower staged).
              C{bf16, 16384, 8192, false, 0}, C{bf16, 65536, 1024, false, 0},
              C{bf16, 4096, 4096, false, 0},
              C{bf16, 64, 131072, false, 0},   // fewer rows than clusters fit: one row each
              C{bf16, 1, 1 << 24, false, 0},   // split across the grid
              C{bf16, 4096, 131064, false, 0}, // 16383 vectors: no cluster divides them
              C{bf16, 256, 1 << 20, false, 0}}) { // not cached: read again per phase
    KernelSpec k = softmaxSpec(c.t, c.m, c.n);
    const ReduceSpec &r = *k.reduce();
    INFO(dtypeName(c.t) << " [" << c.m << ", " << c.n << "]: cluster " << r.cluster << ", "
                        << r.rowsPerBlock() << " rows per block, stage " << r.stage << " ("
                        << r.stageBytes << " B)");
    CHECK(r.stage == c.stage);
    CHECK(r.stageBytes == c.bytes);
    LaunchConfig launch = k.launchConfig(256, 132 * 8);
    CHECK(launch.sharedBytes == c.bytes);
    std::string src = emitKernelSource(k);
    CHECK((src.find("kf_bulk_load(") != std::string::npos) == c.stage);
    CHECK((src.find("extern __shared__") != std::string::npos) == c.stage);
  }
}

TEST_CASE("reduce codegen: a staged row loop waits for its row, fills the registers from "
          "shared memory, meets at a barrier, then starts the next row's copies",
          "[reduce][codegen]") {
  for (int64_t m : {int64_t(4096), int64_t(200)}) {
    KernelSpec k = softmaxSpec(bf16, m, m == 4096 ? 131072 : 65536);
    const ReduceSpec &r = *k.reduce();
    REQUIRE(r.stage);
    const std::string full = emitKernelSource(k);
    const std::string src = full.substr(full.find("extern \"C\" __global__"));
    INFO(src);
    size_t loop = src.find("for (unsigned base");
    size_t first = src.find("kf_bulk_load(");
    size_t wait = src.find("kf_mbar_wait(kf_saddr(&stbar), stph);");
    size_t fill = src.find("reinterpret_cast<const uint4 *>(stage + 0 + (");
    size_t barrier = src.find("__syncthreads(); // every thread's vectors are out of `stage`");
    size_t next = src.find("kf_bulk_load(", first + 1);
    size_t phase = src.find("// Phase 1");
    REQUIRE(loop != std::string::npos);
    CHECK(first < loop); // the first group before the loop
    CHECK(loop < wait);
    CHECK(wait < fill);
    CHECK(fill < barrier);
    CHECK(barrier < next);
    CHECK(next < phase); // the next group's bytes arrive during this group's phases
    CHECK(src.find("kf_bulk_load(", next + 1) == std::string::npos);
    // Every row's input comes from shared memory: no global load of in0 in the loop.
    CHECK(src.find("reinterpret_cast<const uint4 *>(in0") == std::string::npos);
    CHECK(src.find("kf_prefetch_l2") == std::string::npos);
    // The CTA's share of the row: 16384 elements of 2 bytes.
    CHECK(src.find("+ (unsigned)rank * 16384u, 32768u, kf_saddr(&stbar));") != std::string::npos);
    CHECK(src.find("kf_mbar_expect(kf_saddr(&stbar), 32768u);") != std::string::npos);
  }
}

TEST_CASE("reduce codegen: staged kernels of every composite and dtype compile with NVRTC, "
          "without spills",
          "[reduce][codegen][nvrtc]") {
  const std::pair<int64_t, int64_t> shapes[] = {{4096, 131072}, {200, 65536}};
  for (DType t : {f32, bf16, f16})
    for (auto [m, n] : shapes) {
      Graph g("staged");
      test::addEveryComposite(g, t, m, n);
      compiler::CompiledModule mod = compiler::compile(g);
      int staged = 0;
      for (const compiler::CompiledKernel &k : mod.kernels) {
        const ReduceSpec *r = k.spec.reduce();
        if (!r)
          continue;
        INFO(dtypeName(t) << " [" << m << ", " << n << "] " << k.spec.name);
        staged += r->stage;
        CHECK(k.ptxas.spillStores == 0);
      }
      CHECK(staged >= 1);
    }
}
