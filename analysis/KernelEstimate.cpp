#include "analysis/KernelEstimate.h"

#include "analysis/Traffic.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace kfuse {

using namespace codegen;

namespace {

double ceilDiv(double a, double b) { return std::ceil(a / b); }

/// A GEMM kernel's tiles of C, the CTAs computing them (a decode kernel splits each tile's
/// K over ks CTAs) and the CTAs the device runs at once.
struct TileGrid {
  double tiles = 0, ctas = 0, slots = 0, useful = 1;
};

TileGrid tileGrid(const GemmSpec &s, const Target &t) {
  TileGrid g;
  const double M = double(s.M), N = double(s.N), K = double(s.K);
  const double bm = s.bm ? s.bm : 1, bn = s.bn ? s.bn : 1, bk = s.bk ? s.bk : 1;
  g.tiles = ceilDiv(M, bm) * ceilDiv(N, bn) * std::max(1.0, double(s.batch()));
  g.ctas = g.tiles * (s.kernel == GemmKernel::Decode ? s.ks : 1);
  // Wgmma is persistent, one CTA per SM; the others hold as many blocks as fit.
  g.slots = double(t.smCount) *
            (s.kernel == GemmKernel::Wgmma ? 1.0 : double(blocksPerSM(t, s.sharedBytes(), s.threads())));
  if (s.kernel == GemmKernel::Decode && s.batch() == 1) // its grid: s.ctas CTAs (clusters) of ks
    g.slots = std::min(g.slots, double(s.ctas) * s.ks);
  if (s.kernel == GemmKernel::Decode && s.streamK) // every CTA an equal share of the k tiles
    g.ctas = g.slots;
  if (s.kernel != GemmKernel::Gemv && M > 0 && N > 0 && K > 0)
    g.useful = M * N * K / (ceilDiv(M, bm) * bm * ceilDiv(N, bn) * bn * ceilDiv(K, bk) * bk);
  return g;
}

} // namespace

KernelEstimate estimateKernel(const KernelSpec &k, const Target &target) {
  const Target &d = target;
  KernelEstimate e;
  const double bytes = double(k.bytesMoved()), flops = k.flops();
  const double tMem = d.memorySeconds(bytes), tFlop = d.computeSeconds(flops);
  e.roofSeconds = d.roofline(bytes, flops);
  double tCompute = tFlop;
  std::string grid;
  if (k.gemm() && k.numel() > 0) {
    const GemmSpec &s = *k.gemm();
    TileGrid g = tileGrid(s, target);
    const double rounds = std::max(1.0, ceilDiv(g.ctas, g.slots));
    e.busy = g.ctas > 0 ? g.ctas / (rounds * g.slots) : 1.0;
    e.useful = g.useful;
    e.rate = gemmKernelRate(s);
    tCompute = tFlop / (e.busy * e.useful * e.rate);
    grid = fmt::format(" / {:.2f} busy ({:.0f} {}x{} tiles{} in {:.0f} round{} of {:.0f}) / {:.2f} "
                       "useful{} = {}",
                       e.busy, g.tiles, s.bm, s.bn,
                       s.kernel == GemmKernel::Decode && s.ks > 1
                           ? fmt::format(" x {} K slices", s.ks)
                           : std::string(),
                       rounds, rounds == 1 ? "" : "s", g.slots, e.useful,
                       e.rate < 1 ? fmt::format(" / {:.3g} kernel rate", e.rate) : std::string(),
                       formatSeconds(tCompute));
  }
  e.computeBound = tCompute > tMem;
  e.seconds = std::max(tMem, tCompute) + d.kernelSeconds;
  std::string fixed = d.kernelSeconds > 0
                          ? fmt::format(", + {} per kernel", formatSeconds(d.kernelSeconds))
                          : std::string(", no fixed cost per kernel (not measured on this device)");
  if (e.computeBound)
    e.why = fmt::format("compute-bound: {} at {:.0f} TFLOP/s = {}{}{}", formatFlops(flops),
                        d.flopsPerSecond / 1e12, formatSeconds(tFlop), grid, fixed);
  else
    e.why = fmt::format("memory-bound: {} at {:.2f} TB/s = {}{}", formatBytes(bytes),
                        d.bytesPerSecond / 1e12, formatSeconds(tMem), fixed);
  return e;
}

} // namespace kfuse
