// Kernels with the same code are compiled once (compiler/SameCode.h): what counts as the same
// code, and compile() sharing one cubin and entry among the kernels of a repeated pattern.
#include "compiler/Compile.h"
#include "compiler/Dump.h"
#include "compiler/SameCode.h"
#include "ir/Builder.h"

#include <catch2/catch.hpp>

using namespace kfuse;
using namespace kfuse::compiler;

TEST_CASE("same code: names and comments do not count, everything else does", "[compile]") {
  std::string a = "__device__ float kf1_k1_elem(float x) { return x * 2.0f; }  // %a = mul %x, 2\n"
                  "extern \"C\" __global__ void kf1_k1() {}  // kernel %k1\n";
  std::string b = "__device__ float kf7_k7_elem(float x) { return x * 2.0f; }  // %b = mul %y, 2\n"
                  "extern \"C\" __global__ void kf7_k7() {}  // kernel %k7\n";
  CHECK(codeIdentity(a, "kf1_k1") == codeIdentity(b, "kf7_k7"));
  CHECK(codeIdentity(a, "kf1_k1").find("//") == std::string::npos);
  std::string c = b;
  c.replace(c.find("2.0f"), 4, "3.0f"); // another constant
  CHECK(codeIdentity(a, "kf1_k1") != codeIdentity(c, "kf7_k7"));
  // Another kernel's name in the code is code, not this kernel's name.
  std::string d = b;
  d.replace(d.find("void kf7_k7"), 11, "void kf8_k8");
  CHECK(codeIdentity(a, "kf1_k1") != codeIdentity(d, "kf7_k7"));
  CHECK(firstWithSameCode({a, c, b, d, a}, {"kf1_k1", "kf7_k7", "kf7_k7", "kf7_k7", "kf1_k1"}) ==
        std::vector<int>{-1, -1, 0, -1, 0});
}

namespace {

/// `layers` times the same block on [64, 256] activations: tanh(gelu(x W^T + b) + x) * 0.5 (one
/// GEMM kernel, all of it its epilogue), each layer with its own weights, and beside it
/// an elementwise kernel on a tensor of another shape; with `differ`, the last layer's
/// epilogue adds 1 more (other code).
std::unique_ptr<Graph> repeated(int layers, bool differ) {
  auto g = std::make_unique<Graph>("layers");
  Value x = g->input("x", DType::BF16, {64, 256});
  for (int l = 0; l < layers; ++l) {
    Value w = g->input("w" + std::to_string(l), DType::BF16, {256, 256});
    Value b = g->input("b" + std::to_string(l), DType::BF16, {256});
    Value h = gelu_tanh(matmul(x, w, {false, true}) + b);
    x = l == layers - 1 && differ ? (h + x) + 1.0 : h + x;
    x = tanh(x) * 0.5;
    g->output(silu(g->input("s" + std::to_string(l), DType::F32, {1000})) * 2.0);
  }
  g->output(x);
  return g;
}

} // namespace

TEST_CASE("compile: repeated layers are compiled once and share cubin and entry",
          "[compile][nvrtc]") {
  CompileOptions o;
  o.target = targetFor(90, 132);
  CompiledModule m = compile(*repeated(3, true), o);
  // Per layer a GEMM (bias, gelu, residual and tanh in its epilogue) and an elementwise
  // kernel.
  REQUIRE(m.kernels.size() == 6);
  int compiled = 0, gemms = 0;
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    const CompiledKernel &k = m.kernels[i];
    INFO(k.spec.mangled);
    CHECK(!k.cubin.empty());
    if (k.sameCodeAs < 0) {
      ++compiled;
      gemms += k.spec.gemm() ? 1 : 0;
      CHECK(k.entry == k.spec.mangled);
      continue;
    }
    const CompiledKernel &f = m.kernels[size_t(k.sameCodeAs)];
    CHECK(size_t(k.sameCodeAs) < i);
    CHECK(f.sameCodeAs < 0);
    CHECK(k.entry == f.spec.mangled);
    CHECK(k.cubin == f.cubin);
    CHECK(k.ptxas.registers == f.ptxas.registers);
    CHECK(codeIdentity(k.source, k.spec.mangled) == codeIdentity(f.source, f.spec.mangled));
  }
  // The GEMMs of layers 0 and 1 share one code, the last one's (adds 1) is its own; the
  // elementwise kernels are all one code.
  CHECK(compiled == 3);
  CHECK(gemms == 2);
  CHECK(kernelsJson(m).find("\"same_code_as\": null") != std::string::npos);
  CHECK(kernelsJson(m).find("\"same_code_as\": 0") != std::string::npos);
}

TEST_CASE("compile: kernels that differ only in a constant are each compiled", "[compile]") {
  auto g = std::make_unique<Graph>("consts");
  Value x = g->input("x", DType::F32, {1000});
  Value y = g->input("y", DType::F32, {7});
  g->output(x * 2.0);
  g->output(y * 3.0); // another shape: another kernel
  CompileOptions o;
  o.until = Stage::Source;
  CompiledModule m = compile(*g, o);
  REQUIRE(m.kernels.size() == 2);
  for (const CompiledKernel &k : m.kernels) {
    CHECK(k.sameCodeAs == -1);
    CHECK(k.entry == k.spec.mangled);
  }
}
