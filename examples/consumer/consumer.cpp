// kfuse's C++ API from another project (find_package(kfuse), target kfuse::kfuse): builds
// relu(x W^T + b) * 2, checks the reference interpreter against the same numbers computed
// here, compiles it to CUDA C (no GPU needed) and checks the plan is one fused kernel; with a
// GPU, also runs it (runtime::Program) and checks the device's outputs. Exits 0 when every
// check passes, 1 otherwise; prints "GPU part skipped" without a GPU.
#include "compiler/Compile.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Interpreter.h"
#include "ir/Verifier.h"
#include "runtime/Driver.h"
#include "runtime/Program.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace {

constexpr int64_t M = 4, N = 6, K = 8;

/// relu(x W^T + b) * 2 in double; the inputs are small integers, so every sum is exact in
/// any order and the interpreter must match it exactly.
std::vector<double> expected(const kfuse::Tensor &x, const kfuse::Tensor &w,
                             const kfuse::Tensor &b) {
  std::vector<double> y(M * N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = b.data[j];
      for (int64_t k = 0; k < K; ++k)
        s += x.data[i * K + k] * w.data[j * K + k];
      y[i * N + j] = std::max(s, 0.0) * 2;
    }
  return y;
}

kfuse::Tensor ramp(kfuse::TensorType t, int mod, int offset) {
  kfuse::Tensor out(std::move(t));
  for (size_t i = 0; i < out.data.size(); ++i)
    out.data[i] = static_cast<double>(static_cast<int>(i * 7 % mod) - offset);
  return out;
}

} // namespace

int main() {
  using namespace kfuse;
  int failures = 0;
  try {
    Graph g("consumer");
    Value x = g.input("x", f32, {M, K});
    Value w = g.input("w", f32, {N, K});
    Value b = g.input("b", f32, {N});
    g.output(relu(matmul(x, w, {.transB = true}) + b) * 2.0);
    verify(g);

    // The CPU part: the interpreter against the loop above.
    std::vector<Tensor> in = {ramp(x.type(), 5, 2), ramp(w.type(), 3, 1), ramp(b.type(), 4, 2)};
    std::vector<Tensor> out = interpret(g, in);
    std::vector<double> want = expected(in[0], in[1], in[2]);
    for (size_t i = 0; i < want.size(); ++i)
      if (out[0].data[i] != want[i]) {
        std::fprintf(stderr, "consumer_cpp: element %zu: interpreter %g, expected %g\n", i,
                     out[0].data[i], want[i]);
        ++failures;
      }

    // Compiling needs no GPU: -O2 fuses the bias, relu and scale into the matmul's kernel.
    compiler::CompileOptions o;
    o.until = compiler::Stage::Source;
    compiler::CompiledModule m = compiler::compile(g, o);
    if (m.kernels.size() != 1 || m.kernels[0].source.find("__global__") == std::string::npos) {
      std::fprintf(stderr, "consumer_cpp: expected one generated kernel, got %zu\n",
                   m.kernels.size());
      ++failures;
    }

    // The GPU part.
    if (!runtime::Driver::get()) {
      std::printf("consumer_cpp: GPU part skipped: %s\n",
                  runtime::Driver::unavailableReason().c_str());
    } else {
      runtime::Program p(g);
      std::vector<Tensor> dev = p.run(in);
      std::string bad = p.check(in, dev);
      if (!bad.empty()) {
        std::fprintf(stderr, "consumer_cpp: the GPU's outputs differ: %s\n", bad.c_str());
        ++failures;
      }
      std::printf("consumer_cpp: GPU part: %zu kernel(s) ran on %s\n", p.numKernels(),
                  runtime::Driver::get()->deviceName.c_str());
    }
  } catch (const Error &e) {
    std::fprintf(stderr, "consumer_cpp: error: %s\n", e.what());
    return 1;
  }
  if (failures)
    return 1;
  std::printf("consumer_cpp: ok (%lld x %lld output checked against the interpreter)\n",
              static_cast<long long>(M), static_cast<long long>(N));
  return 0;
}
