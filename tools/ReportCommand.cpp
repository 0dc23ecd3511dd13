// `kfuse report G.kf [--device h100|h200|NAME:BW_TBps:TFLOPs[:FIXED_us]] [--arch sm_90a]
// [--tf32] [--json]`: the memory traffic of each graph in the file, every op its own kernel against
// the -O2 pipeline's kernels, with the fusion decisions; for each matmul kernel the GEMM
// kernel codegen chooses for --arch and why; and each kernel's expected time (the roofline,
// the GEMM tiles' quantization, the fixed cost per kernel). Needs no GPU: the traffic model
// of analysis/Traffic.h and analysis/KernelEstimate.h.
#include "compiler/Compile.h"
#include "ir/Error.h"
#include "ir/Parser.h"
#include "ir/JsonText.h"
#include "analysis/Report.h"
#include "tools/CliArgs.h"
#include "tools/CompileFlags.h"
#include "tools/Command.h"
#include "tools/ModuleIO.h"

#include <fmt/core.h>

namespace kfuse::tool {
namespace {

/// The module of `g` without cubins (the report needs no NVRTC), or the error that stopped
/// codegen (e.g. a matmul beyond what a generated GEMM indexes) with the plan alone.
struct Planned {
  compiler::CompiledModule module;
  std::string error;
};

Planned planFor(const Graph &g, const compiler::CompileOptions &o) {
  Planned p;
  try {
    p.module = compiler::compile(g, o);
  } catch (const Error &e) {
    p.error = e.what();
    compiler::CompileOptions planOnly = o;
    planOnly.dumpDir.clear();
    planOnly.until = compiler::Stage::Plan;
    p.module = compiler::compile(g, planOnly);
  }
  return p;
}

/// Each generated kernel's estimate by name, for the traffic tables (applyEstimates).
std::vector<NamedEstimate> estimatesOf(const Planned &p) {
  std::vector<NamedEstimate> e;
  if (p.error.empty())
    for (const compiler::CompiledKernel &k : p.module.kernels)
      e.push_back({k.spec.name, k.estimate.seconds, k.estimate.computeBound});
  return e;
}

/// The unfused plan's kernels' estimates, where they differ from the traffic model's (the
/// roofline + the fixed cost per kernel, which is a pointwise kernel's estimate):
/// estimatesDiffer (analysis/Traffic.h).
std::vector<NamedEstimate> unfusedEstimates(const Graph &g, const compiler::CompileOptions &o) {
  if (!estimatesDiffer(g))
    return {};
  compiler::CompileOptions unfused = o;
  unfused.planning = compiler::Planning::Unfused;
  unfused.dumpDir.clear();
  return estimatesOf(planFor(g, unfused));
}

/// Each matmul kernel's GEMM kernel and why, then every kernel's expected time on the
/// module's device (analysis/KernelEstimate.h).
std::string kernelSection(const Planned &p) {
  const compiler::CompiledModule &m = p.module;
  const Target &t = m.target;
  if (!p.error.empty())
    return fmt::format("\nGEMM kernels on {}: none generated: {}\n", compileArch(t),
                       p.error);
  std::string gemms, times;
  for (const compiler::CompiledKernel &k : m.kernels) {
    if (k.spec.gemm())
      gemms += fmt::format("  {:<10} {}\n             because {}\n", k.spec.name,
                           k.spec.gemm()->describe(), k.spec.gemm()->why);
    times += fmt::format("  {:<10} {:>9}  {}\n", k.spec.name, formatSeconds(k.estimate.seconds),
                         k.estimate.why);
  }
  std::string out;
  if (!gemms.empty())
    out += fmt::format("\nGEMM kernels on {} ({} SMs):\n{}", compileArch(t), t.smCount,
                       gemms);
  if (!m.kernels.empty())
    out += fmt::format("\nexpected on {} ({} SMs) at {}: {} for {} kernel{}\n{}",
                       compileArch(t), t.smCount, t.name,
                       formatSeconds(m.expectedSeconds()), m.kernels.size(),
                       m.kernels.size() == 1 ? "" : "s", times);
  return out;
}

/// The same as a JSON member: `, "expected": {"arch", "sm_count", "seconds", "kernels": [{"name",
/// "gemm" (the GEMM kernel, or null), "seconds", "roofline_seconds", "busy", "useful",
/// "kernel_rate", "compute_bound", "why"}]}`, or `"error"` in place of the kernels.
std::string kernelJson(const Planned &p) {
  const compiler::CompiledModule &m = p.module;
  std::string kernels;
  for (const compiler::CompiledKernel &k : m.kernels) {
    const KernelEstimate &e = k.estimate;
    kernels += fmt::format(
        "{}{{\"name\": \"{}\", \"gemm\": {}, \"seconds\": {:.6g}, \"roofline_seconds\": {:.6g}, "
        "\"busy\": {:.6g}, \"useful\": {:.6g}, \"kernel_rate\": {:.6g}, \"compute_bound\": {}, "
        "\"why\": \"{}\"}}",
        kernels.empty() ? "" : ", ", jsonEscape(k.spec.name),
        k.spec.gemm() ? fmt::format("\"{}\"", jsonEscape(k.spec.gemm()->describe()))
                    : std::string("null"),
        e.seconds, e.roofSeconds, e.busy, e.useful, e.rate, e.computeBound ? "true" : "false",
        jsonEscape(e.why));
  }
  return fmt::format(", \"expected\": {{\"arch\": \"{}\", \"sm_count\": {}, \"seconds\": {:.6g}, {}}}",
                     compileArch(m.target), m.target.smCount, m.expectedSeconds(),
                     p.error.empty() ? fmt::format("\"kernels\": [{}]", kernels)
                                     : fmt::format("\"error\": \"{}\"", jsonEscape(p.error)));
}

int reportMain(const std::vector<std::string> &args) {
  CliArgs cli("report", "FILE.kf",
              "Predicts the memory traffic and time of each graph of FILE.kf ('-' reads stdin) "
              "before fusion "
              "(every op its own kernel) and after the -O2 pipeline (simplify, cse, dce, fuse).");
  unsigned flags = kArchFlag | kTf32Flag | kDumpFlag | kDeviceFlag;
  declareCompileFlags(cli, flags, "h200");
  cli.flag("--json", "print one JSON object per graph instead of the table");
  if (auto rc = cli.parse(args))
    return *rc;
  compiler::CompileOptions o;
  if (auto rc = readCompileFlags(cli, flags, o, "h200"))
    return *rc;
  o.until = compiler::Stage::Source; // the report is the model's, no NVRTC
  // A ParseError propagates to tools/kfuse.cpp, which prints it as-is (exit 1).
  std::vector<std::unique_ptr<Graph>> graphs = loadModule(cli.positionals()[0]);
  bool first = true;
  for (const auto &g : graphs) {
    Planned p = planFor(*g, o);
    TrafficReport r = buildReport(*g, p.module.plan->clone(), p.module.fusion, o.target,
                                  estimatesOf(p), unfusedEstimates(*g, o));
    if (cli.has("--json"))
      fmt::print("{}", reportJson(r, kernelJson(p)));
    else
      fmt::print("{}{}{}", first ? "" : "\n", formatReport(r), kernelSection(p));
    first = false;
  }
  return kExitOk;
}

CommandRegistration reg{"report", "traffic before and after fusion on a device", reportMain};

} // namespace
} // namespace kfuse::tool
