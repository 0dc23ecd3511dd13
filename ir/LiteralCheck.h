#pragma once
/// Warnings about scalar literals that do not fit the dtype their results are stored in.
/// Literals are f32 in kernels and in the interpreter (docs/language.md, "Scalar literals"),
/// so `mul %x, 70000` on an f16 %x computes in f32 and its f16 result overflows to inf where
/// it is near the literal; kfuse says so instead of returning inf without a word. Warnings,
/// not errors: the graph is valid and the exit code does not change.
#include "ir/Graph.h"

#include <string>
#include <vector>

namespace kfuse {

/// One line per finding, naming the graph, the op and the literal:
///  - a binary op on f16/bf16 with a literal beyond that dtype's largest finite value;
///  - a cast to f16/bf16 of a binary op's result whose literal is beyond the cast's dtype.
std::vector<std::string> literalOverflowWarnings(const Graph &g);

} // namespace kfuse
