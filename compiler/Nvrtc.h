#pragma once
/// NVRTC: compiles a whole kfuse program (every kernel of a graph) to cubin and PTX for
/// one architecture. A failed compile throws kfuse::Error with the log, the options and
/// the path where the source was dumped.
#include <string>
#include <vector>

namespace kfuse::compiler {

struct CompiledProgram {
  std::string cubin; ///< bytes
  std::string ptx;
  std::string log;
};

/// "13.0"
std::string nvrtcVersionString();
/// The architectures this NVRTC compiles for (75 for sm_75), ascending: `--arch` is checked
/// against them so that an unknown one is a bad option, not NVRTC_ERROR_INVALID_OPTION.
std::vector<int> nvrtcSupportedArchs();
/// How hard NVVM and ptxas optimize. Programs kfuse runs are always `Optimized`.
/// `CheckOnly` (`--Ofast-compile=max`) runs the same front end, template instantiation,
/// NVVM and ptxas with little optimization, about half the time: for tests that only ask
/// whether a program compiles (every autotune candidate, hundreds of generated kernels) on a
/// machine without a GPU. Nothing it produces is ever launched or cached.
enum class CompileEffort { Optimized, CheckOnly };

/// The options kfuse compiles with for `arch` ("sm_90").
std::vector<std::string> nvrtcOptions(const std::string &arch,
                                      CompileEffort effort = CompileEffort::Optimized);
/// Compiles `source`; `wantPtx` also asks for PTX (cubin is always produced).
CompiledProgram nvrtcCompile(const std::string &source, const std::string &arch, bool wantPtx,
                             CompileEffort effort = CompileEffort::Optimized);

} // namespace kfuse::compiler
