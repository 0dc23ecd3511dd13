#pragma once
/// The memory plan: every value that crosses kernels and is neither a graph input nor a
/// graph output lives in one arena; values whose lifetimes (producer kernel .. last
/// consumer kernel) do not overlap share bytes. Offsets are 256-byte aligned.
#include "codegen/KernelSpec.h"

#include <cstdint>
#include <map>
#include <vector>

namespace kfuse::runtime {

struct MemoryPlan {
  struct Slot {
    unsigned nodeId;
    uint64_t offset, bytes;
    unsigned first, last; ///< kernel indices of the producer and the last consumer
  };
  std::vector<Slot> slots;
  std::map<unsigned, uint64_t> offsetOf; ///< node id -> arena offset
  uint64_t peakBytes = 0;                ///< the arena's size
  uint64_t naiveBytes = 0;               ///< sum of all slots (no reuse)
};

/// `external` holds the node ids bound by the caller (graph inputs and outputs).
MemoryPlan planMemory(const std::vector<codegen::KernelSpec> &specs,
                      const std::vector<unsigned> &external);

} // namespace kfuse::runtime
