// The GEMM epilogue's code weight and the Hopper kernel's rolled epilogue (issue 17): which
// epilogues run as a loop over staged accumulators, and that such a kernel's code stays the
// size of a bare GEMM's instead of growing with the epilogue.
#include "codegen/GemmCodegen.h"
#include "compiler/Compile.h"
#include "ir/Builder.h"
#include "passes/Fusion.h"

#include <catch2/catch.hpp>

using namespace kfuse;
using namespace kfuse::codegen;

namespace {

enum class Tail { Bare, BiasRelu, GeluNew, Ops20, Ops20TwoOutputs };

/// x [M, K] times W^T (W [N, K]) and the epilogue `tail`, in `t` (outputs in `t` too).
std::unique_ptr<Graph> gemmWith(Tail tail, DType t, int64_t M = 4096, int64_t N = 4096,
                                int64_t K = 4096) {
  auto g = std::make_unique<Graph>("epi");
  Value h = matmul(g->input("x", t, {M, K}), g->input("w", t, {N, K}), MatMulAttrs{false, true});
  Value h1 = tail == Tail::Bare ? h : h + g->input("b", t, {N});
  switch (tail) {
  case Tail::Bare:
    g->output(h);
    break;
  case Tail::BiasRelu:
    g->output(relu(h1));
    break;
  case Tail::GeluNew: // GPT-2's gelu_new as Hugging Face writes it
    g->output(0.5 * h1 * (1.0 + tanh(0.7978845608 * (h1 + 0.044715 * pow(h1, 3.0)))));
    break;
  case Tail::Ops20:
  case Tail::Ops20TwoOutputs: { // bench/epilogue/run.py's 20 ops
    Value s2 = (h1 + pow(h1, 3.0) * 0.044715) * 0.7978845608;
    Value sg = sigmoid(h1);
    Value y = sqrt(abs(-(relu(h1 * ((tanh(s2) + 1.0) * 0.5) * sg) + log(exp(sg))))) / 3.0 - 0.25;
    g->output(y);
    if (tail == Tail::Ops20TwoOutputs)
      g->output(h1);
    break;
  }
  }
  fuseGraph(*g);
  return g;
}

const KernelSpec &only(const std::vector<KernelSpec> &specs) {
  REQUIRE(specs.size() == 1);
  REQUIRE(specs[0].gemm());
  return specs[0];
}

} // namespace

TEST_CASE("GEMM epilogue weight: long epilogues with one 16-bit output run as a loop, "
          "GPT-2's gelu_new does not",
          "[codegen][gemm][epilogue]") {
  const Target h200 = targetFor(90, 132);
  auto specsOf = [&](Tail tail, DType t) { return buildKernelSpecs(*gemmWith(tail, t), h200); };
  {
    auto s = specsOf(Tail::Bare, bf16);
    CHECK(epilogueWeight(only(s)) == 0);
    CHECK_FALSE(epilogueRolled(only(s)));
  }
  {
    auto s = specsOf(Tail::BiasRelu, bf16);
    CHECK(epilogueWeight(only(s)) == 2);
    CHECK_FALSE(epilogueRolled(only(s)));
  }
  {
    // add, pow as multiplies (2), mul, add, mul, tanh (20), add, mul, mul: 29. Rolled, GPT-2's
    // c_fc measured 6.7% slower: it stays written out.
    auto s = specsOf(Tail::GeluNew, bf16);
    CHECK(epilogueWeight(only(s)) == 29);
    CHECK_FALSE(epilogueRolled(only(s)));
  }
  for (DType t : {bf16, f16}) {
    auto s = specsOf(Tail::Ops20, t);
    CHECK(epilogueWeight(only(s)) > 100);
    CHECK(epilogueRolled(only(s)));
    CHECK(emitKernelSource(only(s)).find("static constexpr bool rolled = true;") !=
          std::string::npos);
  }
  // Written out where the kernel stores element by element: f32, or two outputs.
  CHECK_FALSE(epilogueRolled(only(specsOf(Tail::Ops20, f32))));
  CHECK_FALSE(epilogueRolled(only(specsOf(Tail::Ops20TwoOutputs, bf16))));
}

TEST_CASE("GEMM epilogue: a rolled 20-op epilogue keeps the kernel's code the size of a bare "
          "GEMM's, without spills",
          "[codegen][gemm][epilogue][nvrtc]") {
  compiler::CompileOptions o; // sm_90a, the H200's 132 SMs
  compiler::CompiledModule bare = compiler::compile(*gemmWith(Tail::Bare, bf16), o);
  compiler::CompiledModule ops20 = compiler::compile(*gemmWith(Tail::Ops20, bf16), o);
  REQUIRE(bare.kernels.size() == 1);
  REQUIRE(ops20.kernels.size() == 1);
  const compiler::CompiledKernel &k = ops20.kernels[0];
  INFO(k.ptxasLog);
  REQUIRE(k.spec.gemm()->kernel == GemmKernel::Wgmma);
  CHECK(k.ptxas.spillStores == 0);
  CHECK(k.ptxas.spillLoads == 0);
  // Written out for each of a thread's 128 values, the epilogue made a 268 KB cubin (the
  // bare kernel's: 62 KB).
  CHECK(k.cubin.size() < bare.kernels[0].cubin.size() * 3 / 2);
}
