// Sibling matmuls as one kernel (issue 17) without a GPU: the kind rule (the same A, B alike),
// the target's policy and its reasons, the dual GEMM spec (inputs, ops, tensor maps,
// parameters, FLOPs, tiles, candidates), and NVRTC compiling dual kernels with no spills.
#include "codegen/CudaCodegen.h"
#include "codegen/GemmTuning.h"
#include "codegen/KernelEmitter.h"
#include "compiler/Compile.h"
#include "compiler/Nvrtc.h"
#include "ir/Builder.h"
#include "ir/Interpreter.h"
#include "ir/KernelRegion.h"
#include "ir/Printer.h"
#include "ir/Random.h"
#include "ir/Verifier.h"
#include "passes/Fusion.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <random>

using namespace kfuse;
using namespace kfuse::codegen;

namespace {
/// silu(x B1) * (x B2) (+ the products as outputs), fused with `target`'s sibling policy.
std::unique_ptr<Graph> swiglu(DType t, int64_t M, int64_t N, int64_t K, MatMulAttrs at,
                              const Target &target, bool storeUp = false) {
  auto g = std::make_unique<Graph>("swiglu");
  Value x = g->input("x", t, at.transA ? Shape{K, M} : Shape{M, K});
  Shape sb = at.transB ? Shape{N, K} : Shape{K, N};
  Value gate = matmul(x, g->input("wg", t, sb), at);
  Value up = matmul(x, g->input("wu", t, sb), at);
  g->output(silu(gate) * up);
  if (storeUp)
    g->output(up);
  fuseGraph(*g, nullptr, siblingGemmPolicy(target));
  return g;
}
} // namespace

TEST_CASE("Sibling matmuls: the kind rule and the target's policy", "[fusion][gemm][sibling]") {
  Graph g("rule");
  Value x = g.input("x", DType::BF16, {64, 128}), x2 = g.input("x2", DType::BF16, {64, 128});
  Value w1 = g.input("w1", DType::BF16, {256, 128}), w2 = g.input("w2", DType::BF16, {256, 128});
  Value wt = g.input("wt", DType::BF16, {128, 256});
  Value a = matmul(x, w1, {false, true}), b = matmul(x, w2, {false, true});
  CHECK(siblingMatmuls(a.node(), b.node()));
  CHECK(!siblingMatmuls(a.node(), matmul(x2, w2, {false, true}).node()));
  FusionDecision layout = siblingMatmuls(a.node(), matmul(x, wt).node());
  CHECK(!layout);
  CHECK(layout.explain().find("differ in type or layout") != std::string::npos);
  // Two Gemm regions join once: a third matmul is refused.
  RegionSummary pair = join(RegionSummary::of(a.node()), RegionSummary::of(b.node()));
  CHECK(pair.sibling != nullptr);
  CHECK(!canJoin(pair, RegionSummary::of(matmul(x, w1, {false, true}).node()), nullptr));

  Target h200 = targetFor(90, 132), portable = targetFor(90, 132, false), a100 = targetFor(80, 108);
  CHECK(siblingGemmSupport(a.node(), b.node(), h200, false));
  CHECK(siblingGemmSupport(a.node(), b.node(), portable, false).explain().find("sm_90a") !=
        std::string::npos);
  CHECK(!siblingGemmSupport(a.node(), b.node(), a100, false));
  Value xs = g.input("xs", DType::BF16, {16, 128});
  FusionDecision decode = siblingGemmSupport(matmul(xs, w1, {false, true}).node(),
                                             matmul(xs, w2, {false, true}).node(), h200, false);
  CHECK(decode.explain().find("decode kernel") != std::string::npos);
  // A problem no GEMM kernel takes is a refusal with its reason, not an error in the pass.
  Value xh = g.input("xh", DType::BF16, {int64_t(1) << 31, 128});
  FusionDecision huge = FusionDecision::allow();
  REQUIRE_NOTHROW(huge = siblingGemmSupport(matmul(xh, w1, {false, true}).node(),
                                            matmul(xh, w2, {false, true}).node(), h200, false));
  CHECK(!huge);
  CHECK(huge.explain().find("2^31") != std::string::npos);
}

TEST_CASE("Sibling matmuls: one dual GEMM spec, its parameters and its FLOPs",
          "[codegen][gemm][sibling]") {
  Target h200 = targetFor(90, 132);
  auto g = swiglu(DType::BF16, 2048, 14336, 4096, {false, true}, h200, true);
  auto specs = buildKernelSpecs(*g, h200);
  REQUIRE(specs.size() == 1);
  const KernelSpec &k = specs[0];
  REQUIRE(k.gemm());
  const GemmSpec &s = *k.gemm();
  CHECK(s.dual);
  CHECK(s.kernel == GemmKernel::Wgmma);
  CHECK(s.bn <= 128);
  CHECK(!s.pingpong);
  CHECK(s.cluster == 1);
  CHECK(s.why.find("two products per tile") != std::string::npos);
  // x, wg, wu; both products first; the join and the stored up-projection after them.
  REQUIRE(k.inputs.size() == 3);
  CHECK(k.inputs[1].name == "%wg");
  CHECK(k.inputs[2].name == "%wu");
  CHECK(k.ops[0].kind == OpKind::MatMul);
  CHECK(k.ops[1].kind == OpKind::MatMul);
  CHECK(k.ops[1].args[1].index == 2);
  CHECK(k.outputs.size() == 2);
  // Three tensor maps (B2 encoded over input 2 with B's layout), then the pointers.
  std::vector<KernelParam> ps = emitterFor(k).params(k);
  INFO(k.inputs.size() << " inputs, " << k.outputs.size() << " outputs, " << s.tensorMaps() << " maps");
  REQUIRE(ps.size() == 3 + 3 + 2);
  CHECK(ps[2].kind == KernelParam::TensorMap);
  CHECK(ps[2].index == 2);
  CHECK(emitterFor(k).flops(k) >= 4.0 * 2048 * 14336 * 4096);
  // The autotuner's candidates are dual too, none wider than 128 or in ping-pong.
  for (const GemmSpec &c : gemmCandidates(s, h200)) {
    CHECK(c.dual);
    CHECK(c.bn <= 128);
    CHECK(!c.pingpong);
    CHECK(c.sharedBytes() <= h200.sharedPerBlock());
  }
  CHECK(gemmProblemKey(s, h200).find("x2") != std::string::npos);
}

TEST_CASE("NVRTC compiles dual wgmma kernels without spills", "[nvrtc][gemm][sibling]") {
  Target h200 = targetFor(90, 132);
  // The heuristic's 128 x (2 x 128) tile with K-major operands, and one consumer warpgroup
  // of 2 x 64 columns with M/N-major ones.
  for (int tr : {2, 1}) {
    auto g = swiglu(tr == 2 ? DType::BF16 : DType::F16, tr == 2 ? 1024 : 40, 4096, 512,
                    {bool(tr & 1), bool(tr & 2)}, h200);
    auto specs = buildKernelSpecs(*g, h200);
    REQUIRE(specs.size() == 1);
    REQUIRE(specs[0].gemm()->dual);
    std::string src = emitProgram(specs);
    CHECK(src.find("float acc, float acc2") != std::string::npos);
    compiler::CompiledProgram p = compiler::nvrtcCompile(src, compileArch(h200), true);
    CHECK(p.ptx.find(fmt::format("wgmma.mma_async.sync.aligned.m64n{}k16", specs[0].gemm()->bn)) !=
          std::string::npos);
    compiler::PtxasInfo info = compiler::parsePtxasInfo(p.log, specs[0].mangled);
    INFO(specs[0].gemm()->describe() << "\n" << p.log);
    CHECK(info.spillStores == 0);
  }
}

// Random graphs of matmuls that share A (inputs or computed values), mixed layouts and
// dtypes, M on both sides of the decode kernel's 16, their products joined, chained and read
// elsewhere: after the -O2 pipeline with the H200's policy every region verifies, every
// kernel's spec builds and its source emits, and the fused plan computes what the graph does.
TEST_CASE("Sibling matmuls: random graphs fuse into kernels that build", "[fusion][gemm][sibling]") {
  Target h200 = targetFor(90, 132);
  std::mt19937 rng(17);
  auto pick = [&](int n) { return static_cast<int>(rng() % unsigned(n)); };
  int duals = 0;
  for (int seed = 0; seed < 200; ++seed) {
    DType t = seed % 3 == 0 ? DType::F16 : seed % 3 == 1 ? DType::BF16 : DType::F32;
    const int64_t M = std::vector<int64_t>{3, 16, 24, 40}[pick(4)], K = 32, N = 32;
    auto g = std::make_unique<Graph>(fmt::format("g{}", seed));
    std::vector<Value> as = {g->input("x0", t, {M, K}), g->input("x1", t, {M, K})};
    std::vector<Value> vals; // [M, N] values
    for (int i = 0; i < 6; ++i) {
      bool tb = pick(2);
      Value w = g->input(fmt::format("w{}", i), t, tb ? Shape{N, K} : Shape{K, N});
      Value a = as[pick(int(as.size()))];
      Value mm = matmul(a, w, {false, tb});
      vals.push_back(mm);
      switch (pick(4)) {
      case 0: // joined with an earlier product
        vals.push_back(silu(mm) * vals[pick(int(vals.size()))]);
        break;
      case 1: // a new A for later matmuls (K = N)
        as.push_back(relu(mm + vals[pick(int(vals.size()))]));
        break;
      default:
        break;
      }
    }
    for (size_t i = 0; i < vals.size(); ++i)
      if (pick(3) == 0 || i + 1 == vals.size())
        g->output(vals[i]);
    std::vector<Tensor> in;
    for (const Node *n : g->inputs())
      in.push_back(randomTensor(n->type(), uint64_t(seed) * 31 + in.size()));
    std::vector<Tensor> before = interpret(*g, in);
    fuseGraph(*g, nullptr, siblingGemmPolicy(h200));
    INFO("seed " << seed << "\n" << printGraph(*g));
    REQUIRE_NOTHROW(verify(*g));
    std::vector<KernelSpec> specs;
    REQUIRE_NOTHROW(specs = buildKernelSpecs(*g, h200));
    for (const KernelSpec &k : specs)
      if (k.gemm() && k.gemm()->dual) {
        ++duals;
        CHECK(k.gemm()->kernel == GemmKernel::Wgmma);
        CHECK(t != DType::F32);
        CHECK(k.gemm()->M > 16);
      }
    CHECK(!emitProgram(specs).empty());
    std::vector<Tensor> after = interpret(*g, in);
    REQUIRE(after.size() == before.size());
    for (size_t j = 0; j < after.size(); ++j)
      CHECK(after[j].data == before[j].data); // fusion moves no arithmetic
  }
  CHECK(duals > 20);
}
