#pragma once
/// The traffic report behind `kfuse report`: the graph as written, every op its own kernel,
/// against the graph after the -O2 pipeline (simplify, cse, dce, fuse), on one device.
/// A library function returning text or JSON so tests can read the numbers the user sees.
#include "ir/Graph.h"
#include "target/Target.h"
#include "passes/Fusion.h"
#include "analysis/Traffic.h"

#include <memory>
#include <string>

namespace kfuse {

struct TrafficReport {
  std::string graphName;
  Target device;
  TrafficPlan unfused;
  TrafficPlan fused;
  FusionLog decisions;
  std::unique_ptr<Graph> fusedGraph;
  /// Bytes saved by fusion, as a fraction of the unfused bytes.
  double byteSaving() const {
    return unfused.bytes() ? 1.0 - double(fused.bytes()) / double(unfused.bytes()) : 0.0;
  }
};

/// Runs the -O2 pipeline on a copy of `g` (which is left as it is) and models both plans.
TrafficReport buildReport(const Graph &g, const Target &d);
/// Models `g` unfused against `fused`, a plan made from it (with the fusion decisions that
/// made it): how the compiler driver's module is reported without planning again. The
/// kernels' estimates, where they were generated (the fused module's, and the unfused
/// plan's), replace the model's times (applyEstimates): one estimate for the table, the
/// totals and the expected times.
TrafficReport buildReport(const Graph &g, std::unique_ptr<Graph> fused, FusionLog decisions,
                          const Target &d, const std::vector<NamedEstimate> &fusedEstimates = {},
                          const std::vector<NamedEstimate> &unfusedEstimates = {});
/// The human-readable table: per fused kernel, then totals, launches and the saving.
std::string formatReport(const TrafficReport &r);
/// The same as one JSON object; `moreMembers` (", \"name\": value, ...") goes in after its
/// own members (kfuse report adds the kernels' expected times).
std::string reportJson(const TrafficReport &r, const std::string &moreMembers = "");

} // namespace kfuse
