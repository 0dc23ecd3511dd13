#pragma once
/// GemmTuning: the kernel configurations a GEMM problem can run with (the heuristic's
/// choice first) and the choices an autotuner measured on a device, keyed by problem and
/// target. buildKernelSpecs applies a tuning; runtime/Autotune.h makes one.
#include "codegen/GemmSpec.h"

#include <map>
#include <string>
#include <vector>

namespace kfuse::codegen {

struct GemmTuning {
  struct Choice {
    std::string config; ///< the chosen candidate's describe()
    std::string why;    ///< what was measured, for the report
  };
  std::map<std::string, Choice> byProblem; ///< gemmProblemKey -> choice
};

/// "bf16 NN M=4096 N=4096 K=4096 batch=[] A=[] B=[] on sm_90a x132 pairs=66": what a tuned
/// choice depends on (not the epilogue, which runs once per output element whatever the
/// tile), including the 2-CTA clusters the device holds at once (a clustered grid's size).
std::string gemmProblemKey(const GemmSpec &s, const Target &t);
/// The configurations `chosen` (makeGemmSpec's) could take instead, itself first; each one
/// valid for the kernel templates and `t`'s shared memory, no two alike.
std::vector<GemmSpec> gemmCandidates(const GemmSpec &chosen, const Target &t);
/// `s` replaced by the candidate `tuning` chose for its problem (if it has one that is still
/// a candidate: a tuning from another kfuse version is ignored).
void applyTuning(GemmSpec &s, const Target &t, const GemmTuning &tuning);

} // namespace kfuse::codegen
