// `kfuse report G.kf [--device h100|h200|NAME:BW_TBps:TFLOPs[:FIXED_us]] [--arch sm_90a]
// [--tf32] [--json]`: the memory traffic of each graph in the file, every op its own kernel against
// the -O2 pipeline's kernels, with the fusion decisions; for each matmul kernel the GEMM
// kernel codegen chooses for --arch and why; and each kernel's expected time (the roofline,
// the GEMM tiles' quantization, the fixed cost per kernel). Needs no GPU: the traffic model
// of passes/Traffic.h and codegen/KernelEstimate.h.
#include "codegen/KernelEstimate.h"
#include "codegen/KernelSpec.h"
#include "ir/Error.h"
#include "ir/Parser.h"
#include "passes/JsonText.h"
#include "passes/Report.h"
#include "tools/CliArgs.h"
#include "tools/Command.h"

#include <fmt/core.h>

namespace kfuse::tool {
namespace {

/// The fused graph's kernels as codegen builds them for `t` (empty, with `error` set, where
/// it cannot, e.g. a matmul beyond what a generated GEMM indexes).
std::vector<codegen::KernelSpec> kernelsFor(const Graph &fused, const codegen::Target &t,
                                            std::string &error) {
  try {
    return codegen::buildKernelSpecs(fused, t);
  } catch (const Error &e) {
    error = e.what();
    return {};
  }
}

/// Each matmul kernel's GEMM kernel and why, then every kernel's expected time on `d`
/// (codegen/KernelEstimate.h).
std::string kernelSection(const Graph &fused, const codegen::Target &t, const Device &d) {
  std::string error;
  std::vector<codegen::KernelSpec> specs = kernelsFor(fused, t, error);
  if (!error.empty())
    return fmt::format("\nGEMM kernels on {}: none generated: {}\n", codegen::compileArch(t),
                       error);
  std::string gemms, times;
  double total = 0;
  for (const codegen::KernelSpec &k : specs) {
    if (k.gemm)
      gemms += fmt::format("  {:<10} {}\n             because {}\n", k.name, k.gemm->describe(),
                           k.gemm->why);
    codegen::KernelEstimate e = codegen::estimateKernel(k, t, d);
    total += e.seconds;
    times += fmt::format("  {:<10} {:>9}  {}\n", k.name, formatSeconds(e.seconds), e.why);
  }
  std::string out;
  if (!gemms.empty())
    out += fmt::format("\nGEMM kernels on {} ({} SMs):\n{}", codegen::compileArch(t), t.smCount,
                       gemms);
  if (!specs.empty())
    out += fmt::format("\nexpected on {} ({} SMs) at {}: {} for {} kernel{}\n{}",
                       codegen::compileArch(t), t.smCount, d.name, formatSeconds(total),
                       specs.size(), specs.size() == 1 ? "" : "s", times);
  return out;
}

/// The same as a JSON member: `, "expected": {"arch", "sm_count", "seconds", "kernels": [{"name",
/// "gemm" (the GEMM kernel, or null), "seconds", "roofline_seconds", "busy", "useful",
/// "kernel_rate", "compute_bound", "why"}]}`, or `"error"` in place of the kernels.
std::string kernelJson(const Graph &fused, const codegen::Target &t, const Device &d) {
  std::string error;
  std::vector<codegen::KernelSpec> specs = kernelsFor(fused, t, error);
  std::string kernels;
  double total = 0;
  for (const codegen::KernelSpec &k : specs) {
    codegen::KernelEstimate e = codegen::estimateKernel(k, t, d);
    total += e.seconds;
    kernels += fmt::format(
        "{}{{\"name\": \"{}\", \"gemm\": {}, \"seconds\": {:.6g}, \"roofline_seconds\": {:.6g}, "
        "\"busy\": {:.6g}, \"useful\": {:.6g}, \"kernel_rate\": {:.6g}, \"compute_bound\": {}, "
        "\"why\": \"{}\"}}",
        kernels.empty() ? "" : ", ", jsonEscape(k.name),
        k.gemm ? fmt::format("\"{}\"", jsonEscape(k.gemm->describe())) : std::string("null"),
        e.seconds, e.roofSeconds, e.busy, e.useful, e.rate, e.computeBound ? "true" : "false",
        jsonEscape(e.why));
  }
  return fmt::format(", \"expected\": {{\"arch\": \"{}\", \"sm_count\": {}, \"seconds\": {:.6g}, {}}}",
                     codegen::compileArch(t), t.smCount, total,
                     error.empty() ? fmt::format("\"kernels\": [{}]", kernels)
                                   : fmt::format("\"error\": \"{}\"", jsonEscape(error)));
}

int reportMain(const std::vector<std::string> &args) {
  CliArgs cli("report", "FILE.kf",
              "Predicts the memory traffic and time of each graph of FILE.kf before fusion "
              "(every op its own kernel) and after the -O2 pipeline (simplify, cse, dce, fuse).");
  cli.option("--device", "DEVICE",
             "h100 (3.35 TB/s, 1979 TFLOP/s; the default), h200 (4.19 TB/s, 790 TFLOP/s, 4 us "
             "per kernel), or NAME:BW_TBps:TFLOPs[:FIXED_us] for any other device, e.g. "
             "a100:2.0:312:5");
  cli.option("--arch", "ARCH",
             "the architecture whose GEMM kernel choice is shown (default sm_90a, 132 SMs)");
  cli.flag("--tf32", "f32 matmuls on tensor cores, inputs rounded to TF32 (default: exact f32)");
  cli.flag("--json", "print one JSON object per graph instead of the table");
  if (auto rc = cli.parse(args))
    return *rc;
  Device d = parseDevice(cli.value("--device", "h100"));
  codegen::Target target;
  try {
    target = codegen::parseArch(cli.value("--arch", "sm_90a"));
  } catch (const Error &e) {
    return cli.badArgs(e.what());
  }
  target.allowTf32 = cli.has("--tf32");
  // A ParseError propagates to tools/kfuse.cpp, which prints it as-is (exit 1).
  std::vector<std::unique_ptr<Graph>> graphs = parseFile(cli.positionals()[0]);
  bool first = true;
  for (const auto &g : graphs) {
    TrafficReport r = buildReport(*g, d);
    if (cli.has("--json"))
      fmt::print("{}", reportJson(r, kernelJson(*r.fusedGraph, target, d)));
    else
      fmt::print("{}{}{}", first ? "" : "\n", formatReport(r), kernelSection(*r.fusedGraph, target, d));
    first = false;
  }
  return kExitOk;
}

CommandRegistration reg{"report", "traffic before and after fusion on a device", reportMain};

} // namespace
} // namespace kfuse::tool
