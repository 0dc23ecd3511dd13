#include "analysis/Report.h"

#include "ir/Verifier.h"
#include "ir/JsonText.h"
#include "codegen/GemmSpec.h"
#include "passes/PassManager.h"

#include <fmt/format.h>

namespace kfuse {

TrafficReport buildReport(const Graph &g, const Target &d) {
  std::unique_ptr<Graph> fused = g.clone();
  PassManagerOptions popts; // sibling matmuls as d's GEMM kernels allow, as compile() plans
  popts.siblingGemm = codegen::siblingGemmPolicy(d);
  PassManager pm(popts);
  pm.addPipeline(defaultPipeline());
  pm.run(*fused);
  return buildReport(g, std::move(fused), pm.fusionLog(), d);
}

TrafficReport buildReport(const Graph &g, std::unique_ptr<Graph> fused, FusionLog decisions,
                          const Target &d, const std::vector<NamedEstimate> &fusedEstimates,
                          const std::vector<NamedEstimate> &unfusedEstimates) {
  TrafficReport r;
  r.graphName = g.name();
  r.device = d;
  r.unfused = unfusedTraffic(g, d);
  r.fusedGraph = std::move(fused);
  verify(*r.fusedGraph);
  r.decisions = std::move(decisions);
  r.fused = fusedTraffic(*r.fusedGraph, d);
  applyEstimates(r.fused, fusedEstimates, d);
  applyEstimates(r.unfused, unfusedEstimates, d);
  return r;
}

static std::string row(const KernelTraffic &k) {
  return fmt::format("  {:<10} {:>4} {:>11} {:>11} {:>13} {:>9.3g} {:<8} {:>10}\n", k.name, k.ops,
                     formatBytes(double(k.bytesRead)), formatBytes(double(k.bytesWritten)),
                     formatFlops(k.flops), k.intensity(), k.computeBound ? "compute" : "memory",
                     formatSeconds(k.seconds));
}

std::string formatReport(const TrafficReport &r) {
  std::string s = fmt::format(
      "traffic report for graph '{}' on {} ({:.3g} TB/s, {:.4g} TFLOP/s, ridge {:.0f} FLOP/B)\n",
      r.graphName, r.device.name, r.device.bytesPerSecond / 1e12, r.device.flopsPerSecond / 1e12,
      r.device.ridge());
  s += "\nfused kernels:\n";
  s += fmt::format("  {:<10} {:>4} {:>11} {:>11} {:>13} {:>9} {:<8} {:>10}\n", "kernel", "ops",
                   "read", "written", "FLOPs", "FLOP/B", "bound", "time");
  for (const KernelTraffic &k : r.fused.kernels)
    s += row(k);
  auto line = [](const char *what, const TrafficPlan &p) {
    return fmt::format("  {:<8} {:>12}  {:>11} moved ({} read, {} written)  {}  {}\n",
                       what, plural((long long)p.launches(), "launch", "launches"), formatBytes(double(p.bytes())),
                       formatBytes(double(p.bytesRead)), formatBytes(double(p.bytesWritten)),
                       formatFlops(p.flops), formatSeconds(p.seconds));
  };
  // A plan's time is its kernels' as one CUDA graph: each kernel after the first pays the
  // device's cost per further kernel of a graph in place of a kernel's alone.
  if (r.device.graphKernelSeconds < r.device.kernelSeconds)
    s += fmt::format("\ntotals (one CUDA graph: {} for the first kernel, {} for each further "
                     "one):\n",
                     formatSeconds(r.device.kernelSeconds),
                     formatSeconds(r.device.graphKernelSeconds));
  else
    s += "\ntotals:\n";
  s += line("unfused", r.unfused);
  s += line("fused", r.fused);
  double speedup = r.fused.seconds > 0 ? r.unfused.seconds / r.fused.seconds : 1.0;
  long long fewer = static_cast<long long>(r.unfused.launches()) -
                   static_cast<long long>(r.fused.launches());
  s += fmt::format("  saving   {} fewer bytes ({:.1f}%), {} fewer {}, {:.2f}x predicted\n",
                   formatBytes(double(r.unfused.bytes() - r.fused.bytes())),
                   r.byteSaving() * 100.0, fewer, fewer == 1 ? "launch" : "launches", speedup);
  return s;
}

static std::string planJson(const TrafficPlan &p) {
  std::string ks;
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const KernelTraffic &k = p.kernels[i];
    ks += fmt::format("{}{{\"name\": \"{}\", \"ops\": {}, \"matmul\": {}, \"bytes_read\": {}, "
                      "\"bytes_written\": {}, \"flops\": {:.17g}, \"intensity\": {:.6g}, "
                      "\"bound\": \"{}\", \"seconds\": {:.6g}}}",
                      i ? ", " : "", k.name, k.ops, k.hasMatmul ? "true" : "false", k.bytesRead,
                      k.bytesWritten, k.flops, k.intensity(),
                      k.computeBound ? "compute" : "memory", k.seconds);
  }
  return fmt::format("{{\"launches\": {}, \"bytes_read\": {}, \"bytes_written\": {}, "
                     "\"bytes\": {}, \"flops\": {:.17g}, \"seconds\": {:.6g}, \"kernels\": [{}]}}",
                     p.launches(), p.bytesRead, p.bytesWritten, p.bytes(), p.flops, p.seconds, ks);
}

std::string reportJson(const TrafficReport &r, const std::string &moreMembers) {
  return fmt::format("{{\"graph\": \"{}\", \"device\": {{\"name\": \"{}\", \"bytes_per_second\": "
                     "{:.6g}, \"flops_per_second\": {:.6g}, \"kernel_seconds\": {:.6g}, "
                     "\"graph_kernel_seconds\": {:.6g}, \"ridge\": {:.6g}}}, \"unfused\": {}, "
                     "\"fused\": {}, \"byte_saving\": {:.6g}, \"decisions\": {}{}}}\n",
                     jsonEscape(r.graphName), jsonEscape(r.device.name), r.device.bytesPerSecond,
                     r.device.flopsPerSecond, r.device.kernelSeconds, r.device.graphKernelSeconds,
                     r.device.ridge(),
                     planJson(r.unfused), planJson(r.fused), r.byteSaving(), r.decisions.json(),
                     moreMembers);
}

} // namespace kfuse
