#include "tools/CompileFlags.h"

#include "compiler/Nvrtc.h"
#include "ir/Error.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kfuse::tool {

void declareCompileFlags(CliArgs &cli, unsigned which, const std::string &defaultDevice) {
  if (which & kArchFlag)
    cli.option("--arch", "ARCH",
               "target architecture (default: the device's, sm_90a on h200 and h100: their own "
               "wgmma; sm_90 portable)");
  if (which & kTf32Flag)
    cli.flag("--tf32", "f32 matmuls on tensor cores, inputs rounded to TF32 (default: exact f32)");
  if (which & kNoFusionFlag)
    cli.flag("--no-fusion", "every op its own kernel (no passes)");
  if (which & kDumpFlag)
    cli.option("--dump", "DIR",
               "write every stage (IR after each pass, fusion decisions, each kernel's CUDA C, "
               "PTX, registers and spills, launches, compile times) under DIR/GRAPH "
               "(also KFUSE_DUMP=DIR)");
  if (which & kJobsFlag)
    cli.option("--jobs", "N", "compile kernels on N threads (default: one per core)", {"-j"});
  if (which & kDeviceFlag)
    cli.option("--device", "DEVICE",
               fmt::format("device model: h200 (4.19 TB/s, 790 TFLOP/s, 4 us per kernel alone, 0.9 us per "
                           "further kernel of a CUDA graph), "
                           "h100 (3.35 TB/s, 989 TFLOP/s, 4 us alone, 1.1 us further), a100 (2.04 TB/s, 312 TFLOP/s, "
                           "sm_80), seed (3.35 TB/s, 1979 TFLOP/s: the seed's numbers), or "
                           "NAME:BW_TBps:TFLOPs[:FIXED_us[:SMS]] (default {})",
                           defaultDevice));
}

std::optional<int> readCompileFlags(const CliArgs &cli, unsigned which,
                                    compiler::CompileOptions &o,
                                    const std::string &defaultDevice) {
  try {
    // The device model first (its rates), then the architecture codegen targets on it.
    if (which & kDeviceFlag)
      o.target = parseTarget(cli.value("--device", defaultDevice));
    if (which & kArchFlag) {
      // Without --arch: the device's own (sm_90a on h200 and h100, sm_80 on a100).
      if (cli.has("--arch"))
        o.target = withArch(std::move(o.target), cli.value("--arch"));
      // Also for report, which never runs NVRTC: an arch it cannot compile for is no target.
      std::vector<int> known = compiler::nvrtcSupportedArchs();
      if (!known.empty() &&
          std::find(known.begin(), known.end(), static_cast<int>(o.target.sm)) == known.end())
        fail("--arch {}: NVRTC {} compiles for sm_{}", compileArch(o.target),
             compiler::nvrtcVersionString(), fmt::join(known, ", sm_"));
    }
  } catch (const Error &e) {
    return cli.badArgs(e.what());
  }
  if (which & kTf32Flag)
    o.allowTf32 = cli.has("--tf32");
  if ((which & kNoFusionFlag) && cli.has("--no-fusion"))
    o.planning = compiler::Planning::Unfused;
  if (which & kDumpFlag)
    o.dumpDir = cli.value("--dump");
  if ((which & kJobsFlag) && cli.has("--jobs")) {
    int jobs = 0;
    if (auto rc = cli.positiveInt("--jobs", jobs))
      return rc;
    o.jobs = static_cast<unsigned>(jobs);
  }
  return std::nullopt;
}

} // namespace kfuse::tool
