#pragma once
/// The part of a cluster's reduce kernel that stages its rows (ReduceSpec::stage): the CTA's
/// share of each row's cached inputs is copied into dynamic shared memory (`stage`) by the
/// bulk copy engine, one row ahead, completing on one mbarrier (`stbar`). In the row loop the
/// threads wait for the row's bytes, move their vectors from `stage` into registers, meet
/// at a barrier, and one thread starts the next row's copies; the phases, combines and
/// stores of this row then run while those bytes arrive.
#include "codegen/KernelSpec.h"

#include <string>

namespace kfuse::codegen {

class Emitter;

/// How the stage's code names things: the row index type ("unsigned" or "unsigned long
/// long") and its literal suffix ("u" or "ull").
struct StageNames {
  std::string idx, suffix;
};

/// Before the row loop: the stage, its mbarrier, and the copies of the CTA's first row
/// (`firstBase`).
void writeStageSetup(Emitter &e, const KernelSpec &k, const StageNames &n,
                     const std::string &firstBase);
/// At the top of the row loop: wait for this row's bytes.
void writeStageWait(Emitter &e);
/// The shared-memory source of input `j`'s vector at offset `q0` of the CTA's share of the
/// row, as a `const unsigned char *` expression.
std::string stagedVector(const KernelSpec &k, size_t j, const std::string &q0);
/// After the registers are filled: a barrier, then the copies of the CTA's next row
/// `nextBase` (if there is one).
void writeStageNext(Emitter &e, const KernelSpec &k, const StageNames &n,
                    const std::string &nextBase);

} // namespace kfuse::codegen
