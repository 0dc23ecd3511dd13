#include "passes/RegionBudget.h"

#include <fmt/format.h>
#include <utility>

namespace kfuse {

void RegionBudget::init(const std::vector<Node *> &nodes,
                        const std::unordered_map<const Node *, int> &pos,
                        llvm::function_ref<bool(const Node *)> isOutput) {
  nodes_ = &nodes;
  pos_ = &pos;
  size_t n = nodes.size();
  slots_.assign(n, {});
  outside_.assign(n, 0);
  graphOut_.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const Node *node = nodes[i];
    if (node->isInput())
      continue;
    Slot &s = slots_[i];
    s.members.push_back(static_cast<int>(i));
    for (const Operand &o : node->operands())
      if (o.node)
        s.ext.insert(o.node);
    outside_[i] = node->users().size();
    graphOut_[i] = isOutput(node);
    s.outs = graphOut_[i] || outside_[i] > 0;
  }
}

template <class F>
void RegionBudget::crossUses(int small, int large, Find find, F &&f) const {
  for (int m : slots_[small].members) {
    const Node *n = (*nodes_)[m];
    for (const Operand &o : n->operands()) // large -> small
      if (o.node && !o.node->isInput() && find(posOf(o.node)) == large)
        f(o.node);
    for (const Node *u : n->users()) // small -> large
      if (find(posOf(u)) == large)
        f(n);
  }
}

size_t RegionBudget::mergedTensors(int small, int large, Find find) {
  const Slot &s = slots_[small], &l = slots_[large];
  scratch_.clear();
  crossUses(small, large, find, [&](const Node *x) { ++scratch_[x]; });
  size_t dropped = 0; // outputs whose every outside reader is in the other group
  for (auto &[x, uses] : scratch_)
    if (!graphOut_[posOf(x)] && outside_[posOf(x)] == uses)
      ++dropped;
  size_t ext = l.ext.size();
  for (const Node *e : s.ext)
    if ((e->isInput() || find(posOf(e)) != large) && !l.ext.count(e))
      ++ext;
  for (int m : s.members)
    ext -= l.ext.count((*nodes_)[m]);
  return ext + l.outs + s.outs - dropped;
}

FusionDecision RegionBudget::check(int a, int b, Find find) {
  size_t ops = slots_[a].members.size() + slots_[b].members.size();
  if (ops > kMaxRegionOps)
    return FusionDecision::forbid(fmt::format(
        "the kernel would hold {} ops, more than the {} one kernel may hold (a cap on its "
        "compile time, registers and source size)",
        ops, kMaxRegionOps));
  if (tensors(a) + tensors(b) <= kMaxRegionTensors) // an upper bound: merging only removes
    return FusionDecision::allow();
  bool aSmall = slots_[a].members.size() <= slots_[b].members.size();
  size_t t = aSmall ? mergedTensors(a, b, find) : mergedTensors(b, a, find);
  if (t > kMaxRegionTensors)
    return FusionDecision::forbid(fmt::format(
        "the kernel would take {} tensors as parameters (the distinct tensors it reads and the "
        "values it writes), more than the {} one kernel may take (a cap on its parameter bytes "
        "and its compile time)",
        t, kMaxRegionTensors));
  return FusionDecision::allow();
}

void RegionBudget::merge(int into, int from, Find find) {
  int small = from, large = into;
  if (slots_[small].members.size() > slots_[large].members.size())
    std::swap(small, large);
  Slot &s = slots_[small], &l = slots_[large];
  size_t dropped = 0;
  crossUses(small, large, find, [&](const Node *x) {
    int p = posOf(x);
    if (--outside_[p] == 0 && !graphOut_[p])
      ++dropped;
  });
  for (const Node *e : s.ext)
    if (e->isInput() || find(posOf(e)) != large)
      l.ext.insert(e);
  for (int m : s.members)
    l.ext.erase((*nodes_)[m]);
  l.members.insert(l.members.end(), s.members.begin(), s.members.end());
  l.outs = l.outs + s.outs - dropped;
  s = Slot();
  if (large != into)
    std::swap(slots_[into], slots_[from]);
}

} // namespace kfuse
