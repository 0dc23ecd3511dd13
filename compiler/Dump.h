#pragma once
/// Dumps: every stage of a compile written to a directory, as TORCH_LOGS or XLA's
/// --xla_dump_to do, so a user can follow one graph from text to cubin. compile() writes
/// them when CompileOptions::dumpDir or the environment's KFUSE_DUMP names a directory;
/// `--dump DIR` on every command sets it. Under DIR/<graph>/:
///   00-input.kf            the graph as given
///   NN-after-PASS.kf       the IR after each pass of the pipeline (CompileOptions::keepPassDumps)
///   plan.kf                the plan the kernels were built from (kernel regions)
///   fusion.json            every fusion decision with its reason
///   kernels/NAME.cu        each kernel's CUDA C (every statement names the op it computes)
///   kernels/NAME.ptx       its PTX
///   kernels/NAME.ptxas.txt what ptxas said (registers, spills, stack, shared memory)
///   nvrtc-options.txt      the NVRTC options, one per line
///   kernels.json           per kernel: launch, registers, spills, shared memory, expected
///                          time, compile time, cache use; and the module's stage times
#include "compiler/Compile.h"

#include <string>

namespace kfuse::compiler {

/// Writes `m`'s stages under dir/<graph name>; throws kfuse::Error when it cannot write.
void writeDump(const CompiledModule &m, const std::string &dir);
/// kernels.json's text.
std::string kernelsJson(const CompiledModule &m);

} // namespace kfuse::compiler
