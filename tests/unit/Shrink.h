#pragma once
/// The test-case shrinker: given a graph on which some check fails (a predicate), it
/// greedily tries smaller graphs and keeps any on which the check still fails, until no
/// candidate is smaller and still failing. Candidates, largest cuts first:
///   - drop an output (the graph keeps at least one), or make one node the only output;
///   - drop dead code (kept only while the failure needs it);
///   - bypass a node: its users read one of its tensor operands of the same type instead;
///   - cut a node loose: its users read a fresh input of its type (its producers die);
///   - replace a tensor operand of a binary op by the literal 1.0 (or 2.0);
///   - shrink a dim: every input dim of size d becomes 1, d/2 or d-1 at once (so equal dims
///     stay equal and matmuls keep matching), or one input's one dim becomes 1;
///   - drop an input's leading dim.
/// Nodes no output needs and unused inputs are removed after every step. A candidate that is
/// not a valid graph (a builder or verifier error) is skipped; a predicate that throws counts
/// as "does not fail" (another failure is not the one being shrunk).
///
/// Shared by the unit tests and the GPU tests (tests/gpu includes this file's .cpp).
#include "ir/Graph.h"

#include <functional>
#include <memory>
#include <string>

namespace kfuse::test {

using FailurePredicate = std::function<bool(const Graph &)>;

struct ShrinkResult {
  std::unique_ptr<Graph> graph; ///< the smallest failing graph found
  int accepted = 0;             ///< candidates that still failed (steps taken)
  int tried = 0;                ///< predicate calls
};

/// `g` must fail (`fails(g)` is true). Stops after `maxTries` predicate calls.
ShrinkResult shrinkGraph(const Graph &g, const FailurePredicate &fails, int maxTries = 4000);

/// Size of a graph for shrinking: nodes (inputs included) plus outputs plus total input
/// elements, so fewer ops and smaller tensors both count.
int64_t graphSize(const Graph &g);

/// Where reproducers go: $KFUSE_REPRO_DIR, else `fallback` (created if needed).
std::string reproducerDir(const std::string &fallback = "/tmp/kfuse-repro");

/// Writes `g` as .kf text to DIR/NAME.kf with a header comment saying what failed and how to
/// keep it as a regression test; returns the path.
std::string saveReproducer(const Graph &g, const std::string &name, const std::string &what,
                           const std::string &dir);

} // namespace kfuse::test
