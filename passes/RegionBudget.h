#pragma once
/// What one fused kernel may grow to, asked by the fusion pass before it merges two groups of
/// nodes (passes/Fusion.cpp): at most kMaxRegionOps ops, and at most kMaxRegionTensors
/// tensors as kernel parameters (ir/KernelRegion.h says why those numbers). Each group's op
/// count, distinct external inputs and outputs are kept up to date as groups merge, the
/// smaller group's members scanned into the larger's, so asking and merging cost the smaller
/// group's size and its members' uses, not the larger group's.
#include "ir/FusionDecision.h"
#include "ir/Graph.h"
#include "ir/KernelRegion.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/DenseSet.h>
#include <llvm/ADT/STLFunctionalExtras.h>

#include <unordered_map>
#include <vector>

namespace kfuse {

class RegionBudget {
public:
  /// `find` maps a node's position to its group's root (the fusion pass's union-find).
  using Find = llvm::function_ref<int(int)>;

  /// Every non-input node of `nodes` (positions as in `pos`) a group of its own; `isOutput`
  /// says which nodes are graph outputs.
  void init(const std::vector<Node *> &nodes, const std::unordered_map<const Node *, int> &pos,
            llvm::function_ref<bool(const Node *)> isOutput);
  /// Whether the groups with roots `a` and `b` fit in one kernel; the reason names the cap.
  FusionDecision check(int a, int b, Find find);
  /// Records that group `from` joins group `into` (both roots, before the union-find links
  /// them); `into`'s slot then describes the union.
  void merge(int into, int from, Find find);
  /// The kernel parameters group `root` needs: its distinct external inputs and outputs.
  size_t tensors(int root) const { return slots_[root].ext.size() + slots_[root].outs; }
  size_t ops(int root) const { return slots_[root].members.size(); }
  /// Whether group `root` is at a cap, so that no sibling can join it.
  bool full(int root) const {
    return ops(root) >= kMaxRegionOps || tensors(root) + 1 >= kMaxRegionTensors;
  }

private:
  struct Slot {
    std::vector<int> members;                  ///< positions of the group's nodes
    llvm::SmallDenseSet<const Node *, 4> ext;  ///< tensors read from outside the group
    size_t outs = 0;                           ///< members written for outside readers
  };
  int posOf(const Node *n) const { return pos_->at(n); }
  /// Calls f(node) once per use that crosses between `small` and `large`, naming the used
  /// node (a member of either).
  template <class F> void crossUses(int small, int large, Find find, F &&f) const;
  /// The tensors of `small` and `large` together; `dropped` the outputs that stop being ones.
  size_t mergedTensors(int small, int large, Find find);

  const std::vector<Node *> *nodes_ = nullptr;
  const std::unordered_map<const Node *, int> *pos_ = nullptr;
  std::vector<Slot> slots_;
  std::vector<size_t> outside_; ///< per node: its uses by nodes of other groups
  std::vector<char> graphOut_;  ///< per node: a graph output (always written)
  llvm::DenseMap<const Node *, size_t> scratch_;
};

} // namespace kfuse
