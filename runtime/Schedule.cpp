#include "runtime/Schedule.h"

#include <algorithm>
#include <cstdint>

namespace kfuse::runtime {

namespace {
/// A piece of memory a kernel touches: an arena byte range, or a caller's buffer (graph
/// input or output) named by its node.
struct Region {
  bool arena;
  uint64_t begin, end; ///< arena bytes, or [nodeId, nodeId + 1)
};

bool overlap(const Region &a, const Region &b) {
  return a.arena == b.arena && a.begin < b.end && b.begin < a.end;
}

bool anyOverlap(const std::vector<Region> &a, const std::vector<Region> &b) {
  for (const Region &x : a)
    for (const Region &y : b)
      if (overlap(x, y))
        return true;
  return false;
}
} // namespace

std::vector<std::vector<unsigned>> kernelDependencies(const std::vector<codegen::KernelSpec> &specs,
                                                      const MemoryPlan &plan) {
  std::map<unsigned, const MemoryPlan::Slot *> slot;
  for (const MemoryPlan::Slot &s : plan.slots)
    slot[s.nodeId] = &s;
  auto region = [&](unsigned nodeId) {
    if (auto it = slot.find(nodeId); it != slot.end())
      return Region{true, it->second->offset, it->second->offset + it->second->bytes};
    return Region{false, nodeId, uint64_t(nodeId) + 1};
  };
  size_t n = specs.size();
  std::vector<std::vector<Region>> reads(n), writes(n);
  for (size_t k = 0; k < n; ++k) {
    if (specs[k].numel() == 0)
      continue;
    for (const codegen::SpecTensor &t : specs[k].inputs)
      reads[k].push_back(region(t.nodeId));
    for (const codegen::SpecOutput &o : specs[k].outputs)
      writes[k].push_back(region(o.tensor.nodeId));
  }
  // Edges, then their transitive reduction: an edge k -> j implied by a path through other
  // kernels is dropped, so a chain stays a chain (CUDA runs a straight line best).
  std::vector<std::vector<unsigned>> deps(n);
  std::vector<std::vector<bool>> reach(n,
                                       std::vector<bool>(n, false)); // reach[j][k]: j waits for k
  for (size_t j = 0; j < n; ++j) {
    std::vector<unsigned> direct;
    for (size_t k = 0; k < j; ++k)
      if (anyOverlap(writes[k], reads[j]) || anyOverlap(writes[k], writes[j]) ||
          anyOverlap(reads[k], writes[j]))
        direct.push_back(static_cast<unsigned>(k));
    // Latest first: an earlier kernel reached through a later kept one is implied.
    for (auto it = direct.rbegin(); it != direct.rend(); ++it) {
      if (reach[j][*it])
        continue;
      deps[j].push_back(*it);
      reach[j][*it] = true;
      for (size_t k = 0; k < *it; ++k)
        if (reach[*it][k])
          reach[j][k] = true;
    }
    std::sort(deps[j].begin(), deps[j].end());
  }
  return deps;
}

} // namespace kfuse::runtime
