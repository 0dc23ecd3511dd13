#pragma once
/// Deterministic pseudo-random tensors for tests and `kfuse run --random SEED`: the same
/// (type, seed, stream) gives the same values on every machine, so a failing check can be
/// replayed from its seed alone. Values are uniform in [-1, 1), already rounded to the dtype
/// (so binding them as inputs changes nothing), and never zero.
#include "ir/Graph.h"
#include "ir/Tensor.h"

#include <cstdint>
#include <vector>

namespace kfuse {

/// Filled on `threads` threads (0: every core for 2^18 elements or more, else one); the
/// values do not depend on it.
Tensor randomTensor(const TensorType &t, uint64_t seed, uint64_t stream = 0,
                    unsigned threads = 0);
/// One tensor per graph input in declaration order; input i uses stream i.
std::vector<Tensor> randomInputs(const Graph &g, uint64_t seed);

} // namespace kfuse
