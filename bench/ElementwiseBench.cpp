// Elementwise benchmark on the GPU: x*2*3 on 1e9 f32 (fused vs unfused) and
// gelu_tanh(x*a+b) in bf16 [65536, 4096] with a, b broadcast rows, each against a
// device-to-device copy of the same bytes measured in the same run. CUDA events, warm-up,
// median of many repetitions. Prints a Markdown table.
#include "ir/Builder.h"
#include "ir/Error.h"
#include "runtime/Driver.h"
#include "runtime/Executable.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

using namespace kfuse;
using runtime::Driver;

static Driver *D;

static double medianMs(const std::function<void()> &work, int reps) {
  CUevent a, b;
  D->check(D->cuEventCreate(&a, 0), "cuEventCreate");
  D->check(D->cuEventCreate(&b, 0), "cuEventCreate");
  for (int i = 0; i < 3; ++i)
    work();
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    D->check(D->cuEventRecord(a, nullptr), "cuEventRecord");
    work();
    D->check(D->cuEventRecord(b, nullptr), "cuEventRecord");
    D->check(D->cuEventSynchronize(b), "cuEventSynchronize");
    float ms = 0;
    D->check(D->cuEventElapsedTime_v2(&ms, a, b), "cuEventElapsedTime");
    t.push_back(ms);
  }
  D->cuEventDestroy_v2(a);
  D->cuEventDestroy_v2(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

static CUdeviceptr alloc(size_t bytes) {
  CUdeviceptr p;
  D->check(D->cuMemAlloc_v2(&p, bytes), "cuMemAlloc");
  D->check(D->cuMemsetD8_v2(p, 0x3C, bytes), "cuMemset");
  return p;
}

static void fuseAll(Graph &g) {
  int k = g.addKernel("fused");
  for (Node *n : g.nodes())
    if (!n->isInput())
      n->setKernel(k);
}

static void row(const char *name, double ms, double bytes, double copyMs) {
  std::printf("| %s | %.3f | %.0f | %.1f%% |\n", name, ms, bytes / (ms * 1e-3) / 1e9, 100.0 * copyMs / ms);
}

int main() {
  D = Driver::get();
  if (!D) {
    std::fprintf(stderr, "ElementwiseBench: %s\n", Driver::unavailableReason().c_str());
    return 77;
  }
  try {
    std::printf("GPU: %s (%s, %d SMs)\n\n", D->deviceName.c_str(), D->arch().c_str(), D->smCount);
    std::printf("| case | median ms | GB/s | copy time / this |\n|---|---|---|---|\n");
    const int reps = 30;
    { // x*2*3, 1e9 f32
      int64_t n = 1000000000;
      size_t bytes = n * 4;
      CUdeviceptr x = alloc(bytes), y = alloc(bytes);
      double copy = medianMs([&] { D->check(D->cuMemcpyDtoDAsync_v2(y, x, bytes, nullptr), "copy"); }, reps);
      row("device copy 4 GB (8 GB moved)", copy, 2.0 * bytes, copy);
      for (int fused = 1; fused >= 0; --fused) {
        Graph g("seed_mul");
        Value v = g.input("x", f32, {n});
        g.output(v * 2.0 * 3.0);
        if (fused)
          fuseAll(g);
        runtime::Executable exe(*D, g);
        exe.launch({x}, {y}, nullptr);
        D->check(D->cuCtxSynchronize(), "first run");
        double ms = medianMs([&] { exe.launch({x}, {y}, nullptr); }, reps);
        row(fused ? "x*2*3 1e9 f32 fused (1 kernel, 8 GB)" : "x*2*3 1e9 f32 unfused (2 kernels, 16 GB)", ms,
            fused ? 2.0 * bytes : 4.0 * bytes, copy);
        if (!fused)
          for (unsigned k = 0; k < exe.specs().size(); ++k) {
            double km = medianMs([&] { exe.launchKernel(k, nullptr); }, reps);
            std::printf("|   kernel %u (%s) | %.3f | %.0f | |\n", k, exe.specs()[k].name.c_str(), km, 2.0 * bytes / (km * 1e-3) / 1e9);
          }
      }
      D->cuMemFree_v2(x);
      D->cuMemFree_v2(y);
    }
    { // gelu_tanh(x*a+b), bf16 [65536, 4096]
      int64_t rows = 65536, cols = 4096;
      size_t bytes = rows * cols * 2;
      CUdeviceptr x = alloc(bytes), y = alloc(bytes), a = alloc(cols * 2), b = alloc(cols * 2);
      double copy = medianMs([&] { D->check(D->cuMemcpyDtoDAsync_v2(y, x, bytes, nullptr), "copy"); }, reps);
      row("device copy 512 MiB (1.07 GB moved)", copy, 2.0 * bytes, copy);
      for (int fused = 1; fused >= 0; --fused) {
        Graph g("gelu");
        Value vx = g.input("x", bf16, {rows, cols});
        Value va = g.input("a", bf16, {cols});
        Value vb = g.input("b", bf16, {cols});
        g.output(gelu_tanh(vx * va + vb));
        if (fused)
          fuseAll(g);
        runtime::Executable exe(*D, g);
        exe.launch({x, a, b}, {y}, nullptr);
        D->check(D->cuCtxSynchronize(), "first run");
        double ms = medianMs([&] { exe.launch({x, a, b}, {y}, nullptr); }, reps);
        row(fused ? "gelu_tanh(x*a+b) bf16 fused" : "gelu_tanh(x*a+b) bf16 unfused (3 kernels)", ms, 2.0 * bytes, copy);
      }
    }
  } catch (const Error &e) {
    std::fprintf(stderr, "ElementwiseBench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
