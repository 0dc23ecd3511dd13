#pragma once
/// The compile options the `kfuse` commands share, declared and read in one place so every
/// command spells and checks them the same way and all of them reach compiler::compile()
/// through one CompileOptions: --arch, --tf32, --no-fusion, --dump, --jobs, --device.
#include "compiler/Compile.h"
#include "tools/CliArgs.h"

#include <optional>
#include <string>

namespace kfuse::tool {

enum CompileFlag : unsigned {
  kArchFlag = 1,     ///< --arch ARCH (the CPU commands; `run` takes the device's)
  kTf32Flag = 2,     ///< --tf32
  kNoFusionFlag = 4, ///< --no-fusion
  kDumpFlag = 8,     ///< --dump DIR
  kJobsFlag = 16,    ///< --jobs N
  kDeviceFlag = 32,  ///< --device NAME (the device model of the expected times)
};

/// Registers the flags in `which` (a CompileFlag mask) on `cli`; `defaultDevice` is the
/// --device default the help shows.
void declareCompileFlags(CliArgs &cli, unsigned which, const std::string &defaultDevice = "h200");
/// Reads them into `o` after cli.parse(); returns an exit code (2, after cli.badArgs) when a
/// value is bad.
std::optional<int> readCompileFlags(const CliArgs &cli, unsigned which,
                                    compiler::CompileOptions &o,
                                    const std::string &defaultDevice = "h200");

} // namespace kfuse::tool
