#pragma once
/// The part of a reduce kernel that combines a row's partials across the CTAs sharing the
/// row (codegen/ReduceSpec.h): a thread-block cluster, whose CTAs push their partials into
/// each other's shared memory, or a split row's CTAs across the grid, which meet in a
/// workspace behind a counter. Either way every CTA combines the partials in rank order,
/// so each gets the same bits, on every run.
#include "codegen/ReduceSpec.h"
#include "ir/Op.h"

#include <string>
#include <vector>

namespace kfuse::codegen {

class Emitter;

/// One reduction's partial over the CTA's share of the row: the variable holding it (the
/// same in every thread of the CTA) and the reduction it belongs to.
struct RowPartial {
  std::string var;
  OpKind kind;
};

/// "sum", "max" or "min": the kf_warp_ helper of reduction `k`.
const char *partialCombineName(OpKind k);
/// The expression that combines partials `a` and `b` of reduction `k`.
std::string partialCombine(OpKind k, const std::string &a, const std::string &b);

/// Before the row loop of a kernel whose rows take several CTAs: `rank`, the CTA's place
/// among its row's CTAs, and what the combines use.
void writeCrossCtaSetup(Emitter &e, const ReduceSpec &r);
/// After the CTA's own combine of a phase: each of `parts` replaced, in every thread, by
/// its combine over the row's CTAs.
void writeCrossCtaCombine(Emitter &e, const ReduceSpec &r, const std::vector<RowPartial> &parts);
/// After the row loop: a cluster's CTAs wait for each other before exiting.
void writeCrossCtaEnd(Emitter &e, const ReduceSpec &r);

} // namespace kfuse::codegen
