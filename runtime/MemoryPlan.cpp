#include "runtime/MemoryPlan.h"

#include <algorithm>

namespace kfuse::runtime {

static uint64_t alignUp(uint64_t v) { return (v + 255) & ~uint64_t(255); }

MemoryPlan planMemory(const std::vector<codegen::KernelSpec> &specs,
                      const std::vector<unsigned> &external) {
  MemoryPlan plan;
  std::map<unsigned, size_t> slotOf;
  for (const codegen::KernelSpec &k : specs)
    for (const codegen::SpecOutput &o : k.outputs) {
      unsigned id = o.tensor.nodeId;
      if (std::find(external.begin(), external.end(), id) != external.end())
        continue;
      slotOf[id] = plan.slots.size();
      plan.slots.push_back(
          {id, 0, alignUp(static_cast<uint64_t>(o.tensor.type.bytes())), k.index, k.index});
    }
  for (const codegen::KernelSpec &k : specs)
    for (const codegen::SpecTensor &t : k.inputs)
      if (auto it = slotOf.find(t.nodeId); it != slotOf.end())
        plan.slots[it->second].last = std::max(plan.slots[it->second].last, k.index);
  // Greedy by size: each slot takes the lowest offset free over its whole lifetime.
  std::vector<size_t> order(plan.slots.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return plan.slots[a].bytes > plan.slots[b].bytes; });
  std::vector<size_t> placed;
  for (size_t si : order) {
    MemoryPlan::Slot &s = plan.slots[si];
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (size_t pi : placed) {
      const MemoryPlan::Slot &p = plan.slots[pi];
      if (p.first <= s.last && s.first <= p.last)
        busy.push_back({p.offset, p.offset + p.bytes});
    }
    std::sort(busy.begin(), busy.end());
    uint64_t off = 0;
    for (auto [b, e] : busy) {
      if (off + s.bytes <= b)
        break;
      off = std::max(off, e);
    }
    s.offset = off;
    plan.peakBytes = std::max(plan.peakBytes, off + s.bytes);
    plan.naiveBytes += s.bytes;
    placed.push_back(si);
  }
  for (const MemoryPlan::Slot &s : plan.slots)
    plan.offsetOf[s.nodeId] = s.offset;
  return plan;
}

} // namespace kfuse::runtime
