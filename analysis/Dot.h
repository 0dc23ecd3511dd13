#pragma once
/// Graphviz DOT for a graph, the picture behind `kfuse dot`. Each kernel is a
/// `subgraph cluster_N` labelled with its name, the bytes it reads and writes and its
/// expected time, all from the traffic model's fused plan (analysis/Traffic.h fusedTraffic)
/// on one device, at the generated kernels' estimates where given. A node outside every kernel region is a kernel of one there, so it is
/// drawn as a one-node cluster (dashed border, named like the traffic model names it,
/// e.g. `mul#3`); fused regions are filled.
///
/// Every edge carries the producer's tensor bytes (formatBytes, as the report writes
/// them): solid between kernels and from inputs / to outputs (memory traffic), dashed and
/// grey with "(in registers)" inside a kernel (no traffic). A kernel reads an external
/// tensor once, so a second op of it reading the same tensor gets "(already read by this
/// kernel)": the plain labels into a cluster add up to its bytes read. Inputs and outputs
/// have their own node shapes; scalar literals are written in the op's label
/// (`%b = mul %a, 2.0`).
/// Node ids are positions in program order (n0, n1, ..., out0, ...), so the same graph
/// always gives the same text, byte for byte.
#include "analysis/Traffic.h"
#include "ir/Graph.h"
#include "target/Target.h"

#include <string>
#include <string_view>

namespace kfuse {

/// One `digraph` ending in a newline. `g` must verify (ir/Verifier.h). `estimates`, the
/// generated kernels' (by the names codegen gives them), replace the model's times, as in
/// `kfuse report` (analysis/Traffic.h applyEstimates).
std::string graphToDot(const Graph &g, const Target &d,
                       const std::vector<NamedEstimate> &estimates = {});

/// `s` as a DOT quoted string, quotes included: `"` and `\` are escaped, a newline becomes
/// `\n` (a line break in a label), and other control bytes and bytes that are not valid
/// UTF-8 are written visibly as `\xHH`, so any user name gives valid DOT that shows it.
std::string dotQuote(std::string_view s);

} // namespace kfuse
