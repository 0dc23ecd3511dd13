// The autotuner on the device: every candidate of each GEMM problem is launched and timed,
// the fastest is kept and cached, the tuned program still computes what the interpreter
// does, and a second run takes the cached choice without measuring.
#include "GpuHarness.h"
#include "codegen/DecodeGemm.h"
#include "codegen/GemmTuning.h"
#include "ir/Builder.h"
#include "ir/Random.h"
#include "runtime/DeviceTensor.h"
#include "runtime/Executable.h"
#include "runtime/Program.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <unistd.h>

using namespace kfuse;

TEST_CASE("autotune: every candidate timed, the fastest kept and cached, results unchanged",
          "[gpu][gemm][tune][timing]") {
  runtime::Driver &d = runtime::Driver::require();
  // A cache folder of this test's own, so the first run measures.
  namespace fs = std::filesystem;
  const char *old = std::getenv("KFUSE_CACHE_DIR");
  std::string keep = old ? old : "";
  fs::path dir = fs::temp_directory_path() / fmt::format("kfuse-autotune-test-{}", ::getpid());
  fs::remove_all(dir);
  ::setenv("KFUSE_CACHE_DIR", dir.c_str(), 1);
  struct Restore {
    std::string keep;
    bool had;
    fs::path dir;
    ~Restore() {
      if (had)
        ::setenv("KFUSE_CACHE_DIR", keep.c_str(), 1);
      else
        ::unsetenv("KFUSE_CACHE_DIR");
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } restore{keep, old != nullptr, dir};

  // Two GEMM kernels: a decode-sized one (M = 4) and a prefill-sized one (wgmma on sm_90a,
  // mma.sync elsewhere), both with epilogues.
  Graph g("tune");
  Value x = g.input("x", DType::BF16, {4, 2048});
  Value w = g.input("w", DType::BF16, {2048, 1024});
  g.output(relu(matmul(x, w) + g.input("b", DType::BF16, {1024})));
  Value p = g.input("p", DType::BF16, {384, 512});
  Value q = g.input("q", DType::BF16, {640, 512});
  g.output(silu(matmul(p, q, {false, true})) * 0.5);
  std::vector<Tensor> inputs = randomInputs(g, 5);

  runtime::Program tuned(g, {.autotune = true});
  const auto &res = tuned.autotuned();
  REQUIRE(res.size() == 2);
  Target t = runtime::deviceTarget(d);
  for (const runtime::AutotuneResult &r : res) {
    INFO(r.kernel << ": " << r.key);
    CHECK_FALSE(r.fromCache);
    REQUIRE(r.tried.size() >= 4);
    REQUIRE(r.chosen < r.tried.size());
    for (const auto &c : r.tried) {
      INFO(c.config << ": " << c.us << " us");
      CHECK(c.us > 0); // every candidate launched
      CHECK(r.tried[r.chosen].us <= c.us);
    }
  }
  // The program runs the chosen configurations, says so, and matches the interpreter.
  unsigned tunedKernels = 0;
  for (const codegen::KernelSpec &k : tuned.executable().specs())
    if (k.gemm()) {
      ++tunedKernels;
      CHECK(k.gemm()->why.rfind("autotuned on " + d.deviceName, 0) == 0);
      bool listed = false;
      for (const runtime::AutotuneResult &r : res)
        listed |= r.tried[r.chosen].config == k.gemm()->describe() &&
                  r.key == codegen::gemmProblemKey(*k.gemm(), t);
      CHECK(listed);
    }
  CHECK(tunedKernels == 2);
  std::vector<Tensor> out = tuned.run(inputs);
  CHECK(tuned.check(inputs, out) == "");

  // Again: from the cache, the same choices, nothing measured.
  runtime::Program again(g, {.autotune = true});
  REQUIRE(again.autotuned().size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(again.autotuned()[i].fromCache);
    CHECK(again.autotuned()[i].tried[0].config == res[i].tried[res[i].chosen].config);
  }
  std::vector<Tensor> out2 = again.run(inputs);
  CHECK(again.check(inputs, out2) == "");
  // A damaged cache entry is measured again, not trusted.
  for (const auto &e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("autotune-", 0) == 0) {
      std::ofstream(e.path(), std::ios::trunc) << "kfuse-autotune-v1\ngarbage\n";
    }
  runtime::Program third(g, {.autotune = true});
  for (const runtime::AutotuneResult &r : third.autotuned())
    CHECK_FALSE(r.fromCache);
}

// Every candidate the autotuner may pick computes the matmul and its epilogue: all of them
// compiled as one program (as the autotuner does), launched one by one on the same inputs,
// each output checked against the interpreter. Decode problems with N off the 64/128-column
// tile (TMA zero-fills the edge box) and K split over up to 8 CTAs, both layouts; a Hopper
// problem off every wgmma tile.
TEST_CASE("autotune: every candidate configuration is correct", "[gpu][gemm][tune]") {
  runtime::Driver &d = runtime::Driver::require();
  Target t = runtime::deviceTarget(d);
  struct P {
    int64_t M, N, K;
    bool tb;
  };
  for (const P &p : std::vector<P>{{3, 1000, 1024, false}, {16, 1000, 1024, true},
                                   {1, 136, 2056, true}, {300, 520, 264, false}}) {
    Graph g("cand");
    Value a = g.input("a", DType::BF16, {p.M, p.K});
    Value b = g.input("b", DType::BF16, p.tb ? Shape{p.N, p.K} : Shape{p.K, p.N});
    g.output(relu(matmul(a, b, {false, p.tb}) + g.input("bias", DType::BF16, {p.N})));
    runtime::Program ref(g); // the reference, and the fused plan the candidates come from
    std::vector<Tensor> inputs = randomInputs(g, 11 + p.M);
    const codegen::KernelSpec &k = ref.executable().specs().at(0);
    REQUIRE(k.gemm());
    std::vector<codegen::GemmSpec> cands = codegen::gemmCandidates(*k.gemm(), t);
    // The Hopper problem's 15 tiles fit one per CTA; each candidate again on 4 CTAs takes
    // 3-4 tiles per CTA (ping-pong: 1-2 per consumer, one consumer with one tile more).
    // Each decode candidate again as a persistent grid of 3 CTAs (clusters) along x: 3-6 of
    // the 3-16 column tiles each, the ring streaming on from one to the next. Each without a
    // K split again as stream-K over 7 CTAs (1 x 136, 27 units: shares of 3-4 k tiles, a
    // tile over 3 CTAs), the first also over 2 (shares of several whole tiles with a cut one
    // at each end).
    for (size_t i = 0, n = cands.size(); i < n; ++i)
      if (cands[i].kernel == codegen::GemmKernel::Wgmma) {
        cands.push_back(cands[i]);
        cands.back().ctas = 4;
      } else if (cands[i].kernel == codegen::GemmKernel::Decode && codegen::decodeColumnTiles(cands[i]) > 3) {
        codegen::GemmSpec c = cands[i];
        c.ctas = 3;
        REQUIRE(codegen::decodeLoops(c));
        if (c.sharedBytes() <= t.sharedPerBlock())
          cands.push_back(c);
      }
    for (size_t i = 0, n = cands.size(); i < n; ++i)
      if (cands[i].kernel == codegen::GemmKernel::Decode && cands[i].ks == 1 && !cands[i].streamK)
        for (unsigned ctas : {2u, 7u}) {
          if (ctas == 2 && i > 0)
            continue;
          codegen::GemmSpec c = cands[i];
          c.ctas = ctas;
          c.streamK = true;
          if (codegen::decodeStreamUnits(c) >= ctas && c.sharedBytes() <= t.sharedPerBlock())
            cands.push_back(c);
        }
    std::vector<codegen::KernelSpec> specs;
    for (size_t i = 0; i < cands.size(); ++i) {
      codegen::KernelSpec c = k;
      c.kind = cands[i];
      c.index = static_cast<unsigned>(i);
      c.mangled = fmt::format("{}_cand{}", k.mangled, i);
      specs.push_back(c);
    }
    std::vector<unsigned> inIds, outIds;
    std::vector<runtime::DeviceBuffer> bufs;
    std::vector<CUdeviceptr> inPtr, outPtr;
    for (const codegen::SpecTensor &x : k.inputs) {
      size_t gi = 0;
      while (ref.plan().inputs()[gi]->id() != x.nodeId)
        ++gi;
      inIds.push_back(x.nodeId);
      bufs.push_back(runtime::upload(inputs[gi]));
      inPtr.push_back(bufs.back().ptr());
    }
    REQUIRE(k.outputs.size() == 1);
    outIds.push_back(k.outputs[0].tensor.nodeId);
    bufs.emplace_back(static_cast<size_t>(k.outputs[0].tensor.type.bytes()));
    runtime::DeviceBuffer &out = bufs.back();
    outPtr.push_back(out.ptr());
    runtime::Executable exe(d, compiler::compileKernels(specs, inIds, outIds, runtime::deviceOptions(d)));
    exe.bind(inPtr, outPtr);
    unsigned tmaDecode = 0, pingpong = 0;
    for (size_t i = 0; i < cands.size(); ++i) {
      out.poison();
      exe.launchKernel(static_cast<unsigned>(i), nullptr);
      d.check(d.cuCtxSynchronize(), "running a candidate");
      std::vector<Tensor> got{runtime::download(k.outputs[0].tensor.type, out.ptr())};
      INFO("M=" << p.M << " N=" << p.N << " K=" << p.K << " transB=" << p.tb << ": "
                << cands[i].describe());
      CHECK(ref.check(inputs, got) == "");
      tmaDecode += cands[i].kernel == codegen::GemmKernel::Decode && cands[i].tensorMaps() == 1;
      pingpong += cands[i].pingpong;
    }
    if (p.M > 16 && t.sm == 90 && t.archSpecific)
      CHECK(pingpong >= 2);
    if (p.M <= 16 && t.sm == 90)
      CHECK(tmaDecode > 0);
  }
}
