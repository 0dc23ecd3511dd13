#pragma once
/// Random graphs valid by construction, for differential and property tests of any stage:
/// broadcasting shapes, values with several consumers, several outputs (some also consumed),
/// mixed dtypes joined by casts, matmuls with random transposes. Values stay bounded (no
/// division by tensors, no pow, no log of negatives) so numeric comparisons are meaningful.
/// The same seed always gives the same graph.
#include "ir/Graph.h"

#include <cstdint>
#include <memory>

namespace kfuse::test {

struct RandomGraphOptions {
  int minOps = 2;
  int maxOps = 16;
  int maxOutputs = 3;
  int maxDim = 6;
  bool matmuls = true;
  bool mixedDTypes = true;
};

std::unique_ptr<Graph> randomGraph(uint64_t seed, const RandomGraphOptions &opts = {});

} // namespace kfuse::test
