// Elementwise benchmark on the GPU, each case against a device-to-device copy of the same
// bytes measured in the same run (CUDA events, warm-up, median of many; runtime/Timing.h):
//  - x*2*3 on 1e9 f32, fused (one kernel) vs unfused (two);
//  - gelu_tanh(x*a+b) in bf16 [65536, 4096] with a, b broadcast rows, fused vs unfused,
//    and the fused kernel with 1 and 2 vector steps in flight per thread (codegen unroll);
//  - 64 tiny kernels launched one by one on a stream vs replayed as one CUDA graph.
// Prints Markdown tables; exit 77 without a GPU.
#include "ir/Builder.h"
#include "ir/Error.h"
#include "runtime/DeviceTensor.h"
#include "runtime/Executable.h"
#include "runtime/Timing.h"

#include <cstdio>

using namespace kfuse;
using runtime::DeviceBuffer;
using runtime::Driver;

static Driver *D;
static runtime::TimingOptions kReps{.warmup = 3, .reps = 50};

static DeviceBuffer filled(size_t bytes) {
  DeviceBuffer b(bytes);
  D->check(D->cuMemsetD8_v2(b.ptr(), 0x3C, bytes), "cuMemset"); // 0x3C3C: 1.05 in bf16/f16
  return b;
}

static void fuseAll(Graph &g) {
  int k = g.addKernel("fused");
  for (Node *n : g.nodes())
    if (!n->isInput())
      n->setKernel(k);
}

static void row(const char *name, double ms, double bytes, double copyMs) {
  std::printf("| %s | %.4f | %.0f | %.1f%% |\n", name, ms, bytes / (ms * 1e-3) / 1e9,
              100.0 * copyMs / ms);
}

static double timeProgram(runtime::Executable &exe, llvm::ArrayRef<CUdeviceptr> in,
                          llvm::ArrayRef<CUdeviceptr> out) {
  exe.launch(in, out, nullptr);
  D->check(D->cuCtxSynchronize(), "first run");
  return runtime::medianMs(
      nullptr, [&] { exe.launch(in, out, nullptr); }, kReps);
}

static void seedMul() {
  int64_t n = 1000000000;
  size_t bytes = n * 4;
  DeviceBuffer x = filled(bytes), y(bytes);
  double copy = runtime::copyMs(bytes, kReps);
  row("device copy 4 GB (8 GB moved)", copy, 2.0 * bytes, copy);
  for (int fused = 1; fused >= 0; --fused) {
    Graph g("seed_mul");
    Value v = g.input("x", f32, {n});
    g.output(v * 2.0 * 3.0);
    if (fused)
      fuseAll(g);
    runtime::Executable exe(*D, runtime::compileAsGiven(*D, g));
    double ms = timeProgram(exe, {x.ptr()}, {y.ptr()});
    row(fused ? "x*2*3 1e9 f32 fused (1 kernel, 8 GB)" : "x*2*3 1e9 f32 unfused (2 kernels, 16 GB)",
        ms, fused ? 2.0 * bytes : 4.0 * bytes, fused ? copy : 2 * copy);
  }
}

static void gelu() {
  int64_t rows = 65536, cols = 4096;
  size_t bytes = rows * cols * 2;
  DeviceBuffer x = filled(bytes), y(bytes), a = filled(cols * 2), b = filled(cols * 2);
  double copy = runtime::copyMs(bytes, kReps);
  row("device copy 512 MiB (1.07 GB moved)", copy, 2.0 * bytes, copy);
  for (int variant = 0; variant < 3; ++variant) {
    Graph g("gelu");
    Value vx = g.input("x", bf16, {rows, cols});
    Value va = g.input("a", bf16, {cols});
    Value vb = g.input("b", bf16, {cols});
    g.output(gelu_tanh(vx * va + vb));
    if (variant < 2)
      fuseAll(g);
    compiler::CompileOptions o;
    o.codegen.unroll = variant == 1 ? 2 : codegen::kDefaultUnroll;
    runtime::Executable exe(*D, runtime::compileAsGiven(*D, g, o));
    double ms = timeProgram(exe, {x.ptr(), a.ptr(), b.ptr()}, {y.ptr()});
    const char *name = variant == 0 ? "gelu_tanh(x*a+b) bf16 fused (default: 1 step in flight)"
                       : variant == 1
                           ? "gelu_tanh(x*a+b) bf16 fused, 2 steps in flight"
                           : "gelu_tanh(x*a+b) bf16 unfused (3 kernels, 2 intermediates)";
    double moved = variant < 2 ? 2.0 * bytes : 6.0 * bytes;
    row(name, ms, moved, copy * moved / (2.0 * bytes));
  }
}

static void launchCost() {
  const int kernels = 64;
  Graph g("chain");
  Value v = g.input("x", f32, {256});
  for (int i = 0; i < kernels; ++i)
    v = i % 2 ? neg(v) : abs(v);
  g.output(v);
  runtime::Executable exe(*D, runtime::compileAsGiven(*D, g));
  DeviceBuffer x = filled(1024), y(1024);
  double stream = timeProgram(exe, {x.ptr()}, {y.ptr()});
  exe.captureGraph({x.ptr()}, {y.ptr()});
  double graph = runtime::medianMs(
      nullptr, [&] { exe.replay(nullptr); }, kReps);
  std::printf("\n| %d tiny kernels (f32[256] each) | total us | us per kernel |\n|---|---|---|\n",
              kernels);
  std::printf("| stream launches | %.1f | %.2f |\n", stream * 1e3, stream * 1e3 / kernels);
  std::printf("| one CUDA graph replay | %.1f | %.2f |\n", graph * 1e3, graph * 1e3 / kernels);
}

int main() {
  D = Driver::get();
  if (!D) {
    std::fprintf(stderr, "ElementwiseBench: %s\n", Driver::unavailableReason().c_str());
    return 77;
  }
  try {
    std::printf("GPU: %s (%s, %d SMs); median of %d after %d warm-ups\n\n", D->deviceName.c_str(),
                D->arch().c_str(), D->smCount, kReps.reps, kReps.warmup);
    std::printf("| case | median ms | GB/s | copy of the same bytes: its time / this "
                "|\n|---|---|---|---|\n");
    seedMul();
    gelu();
    launchCost();
  } catch (const Error &e) {
    std::fprintf(stderr, "ElementwiseBench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
