#pragma once
/// The verifier checks a whole graph's invariants and throws kfuse::Error naming the first
/// broken one. Run after building, parsing and every pass (in tests, and with --verify-each).
#include "ir/Graph.h"

namespace kfuse {

/// Checks: node order is topological; operand counts, kinds and types agree with type
/// inference; use lists match operands; inputs are named, unique and in the input list;
/// non-empty names are unique; there is at least one output and every output is live;
/// kernel regions name existing kernels, hold no inputs, are contiguous in program order
/// (which also rules out cycles between kernels), and every kernel is non-empty.
void verify(const Graph &g);

} // namespace kfuse
