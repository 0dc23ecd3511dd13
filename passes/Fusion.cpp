// The fusion pass (see Fusion.h for the rules). Union-find over nodes, processed in program
// order; kernel-level cycles are ruled out by a pruned search over the kernels' direct
// dependencies (a kernel entirely before another in program order cannot depend on it), so
// the whole pass is near-linear in the number of nodes.
#include "passes/Fusion.h"

#include "ir/KernelRegion.h"
#include "passes/RegionBudget.h"

#include "ir/Error.h"
#include "ir/JsonText.h"
#include "ir/Units.h"
#include "passes/Pass.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/DenseSet.h>
#include <llvm/ADT/STLExtras.h>

#include <algorithm>
#include <queue>
#include <unordered_map>
#include <unordered_set>

namespace kfuse {

std::string FusionEdge::str() const {
  return fmt::format("{} -> {}: {}: {}", producer, consumer, fused ? "fused" : "not fused", reason);
}

std::string FusionLog::str() const {
  std::string s;
  for (const FusionEdge &e : edges)
    s += e.str() + "\n";
  return s;
}

size_t FusionLog::unfused() const {
  return static_cast<size_t>(
      std::count_if(edges.begin(), edges.end(), [](const FusionEdge &e) { return !e.fused; }));
}

std::string FusionLog::json() const {
  std::string s = "[";
  for (size_t i = 0; i < edges.size(); ++i) {
    const FusionEdge &e = edges[i];
    s += fmt::format("{}{{\"producer\": \"{}\", \"consumer\": \"{}\", \"fused\": {}, "
                     "\"reason\": \"{}\"}}",
                     i ? ", " : "", jsonEscape(e.producer), jsonEscape(e.consumer),
                     e.fused ? "true" : "false", jsonEscape(e.reason));
  }
  return s + "]";
}

namespace {

int64_t operandBytes(const Node *n) {
  int64_t r = 0;
  llvm::SmallVector<const Node *, 2> seen;
  for (const Operand &o : n->operands())
    if (o.node && std::find(seen.begin(), seen.end(), o.node) == seen.end()) {
      seen.push_back(o.node);
      r += o.node->type().bytes();
    }
  return r;
}

class Fuser {
public:
  Fuser(Graph &g, FusionLog *log, SiblingGemmPolicy siblingGemm)
      : g_(g), log_(log), siblingGemm_(std::move(siblingGemm)) {}

  void run() {
    g_.clearKernels();
    for (Node *o : g_.outputs())
      outputs_.insert(o);
    if (recomputeBroadcastProducers())
      g_.sortTopologically();
    group();
    fuseSiblings();
    emitKernels();
  }

private:
  // --- 1. broadcast producers: recompute (clone) into larger consumers, or store ---------
  Node *rootOf(Node *u) {
    auto it = root_.find(u);
    return it == root_.end() ? u : it->second;
  }

  bool recomputeBroadcastProducers() {
    bool cloned = false;
    std::vector<Node *> order = g_.nodes();
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      Node *p = *it;
      if (!isElementwise(p->kind()))
        continue;
      // Distinct users grouped by the root (kernel anchor) they will live with.
      llvm::SmallVector<std::pair<Node *, llvm::SmallVector<Node *, 2>>, 2> big;
      bool needed = outputs_.count(p) > 0;
      // Hashed, not scanned: a value with 100k users would make a scan per user quadratic.
      llvm::SmallVector<Node *, 4> users;
      llvm::SmallDenseSet<Node *, 8> seenUsers;
      for (Node *u : p->users())
        if (seenUsers.insert(u).second)
          users.push_back(u);
      llvm::SmallDenseMap<Node *, unsigned, 4> slotOf; // root -> index in big
      for (Node *u : users) {
        Node *r = rootOf(u);
        if (isElementwise(u->kind()) && isElementwise(r->kind()) &&
            r->type().numElements() > p->type().numElements()) {
          auto [slot, isNew] = slotOf.try_emplace(r, big.size());
          if (isNew)
            big.push_back({r, {u}});
          else
            big[slot->second].second.push_back(u);
        } else {
          needed = true;
        }
      }
      if (big.empty())
        continue;
      int64_t bytes = p->type().bytes(), reads = operandBytes(p);
      int64_t k = static_cast<int64_t>(big.size());
      int64_t store = bytes * k + (needed ? 0 : bytes + reads);
      int64_t recompute = reads * k;
      if (recompute > store) {
        for (auto &[r, us] : big)
          for (Node *u : us)
            note(p, u, false,
                 fmt::format("{} is broadcast into a larger consumer; recomputing it there reads "
                             "{} per kernel, storing it and reading it back costs {} in all",
                             nodeLabel(p), formatBytes(reads), formatBytes(store)));
        continue;
      }
      bool reuse = !needed;
      llvm::SmallVector<std::pair<Node *, Node *>, 4> moves; // (user, clone), applied at once
      for (auto &[r, us] : big) {
        Node *c = p;
        if (!reuse) {
          c = g_.create(p->kind(), p->operands(), p->attrs());
          cloned = true;
          for (Node *u : us)
            moves.push_back({u, c});
          note(p, r, true,
               fmt::format("recomputed in the kernel of {}: reading its operands ({}) costs less "
                           "than storing it and reading it back",
                           nodeLabel(r), formatBytes(reads)));
        } else if (explaining()) { // the producer itself moves into this consumer's kernel
          for (Node *u : us)
            note(p, u, true, whyFused(p, u, RegionKind::Pointwise, RegionKind::Pointwise));
        }
        reuse = false;
        root_[c] = r;
      }
      g_.redirectUses(p, moves);
    }
    return cloned;
  }

  // --- 2. producer -> consumer grouping ---------------------------------------------------
  bool isGemm(int root) const { return region_[root].kind == RegionKind::Gemm; }

  int find(int i) {
    while (parent_[i] != i) {
      parent_[i] = parent_[parent_[i]];
      i = parent_[i];
    }
    return i;
  }

  int unite(int a, int b) {
    a = find(a);
    b = find(b);
    if (a == b)
      return a;
    // The root is chosen by the uncompacted dependency count, as before compaction existed,
    // so that group identities (and with them every decision and message) stay the same.
    if (rawDeps_[a] < rawDeps_[b])
      std::swap(a, b);
    budget_.merge(a, b, [&](int i) { return find(i); }); // before b's members point to a
    parent_[b] = a;
    rawDeps_[a] += rawDeps_[b];
    deps_[a].insert(deps_[a].end(), deps_[b].begin(), deps_[b].end());
    deps_[b].clear();
    deps_[b].shrink_to_fit();
    compactDeps(a);
    region_[a] = join(region_[a], region_[b]);
    std::vector<ReductionRead> &reads = reductionReads_[a];
    reads.insert(reads.end(), reductionReads_[b].begin(), reductionReads_[b].end());
    reductionReads_[b] = {};
    llvm::erase_if(reads, [&](const ReductionRead &e) {
      return find(pos_.at(e.second)) == a; // inside the kernel now: canMerge checked it
    });
    minPos_[a] = std::min(minPos_[a], minPos_[b]);
    maxPos_[a] = std::max(maxPos_[a], maxPos_[b]);
    return a;
  }

  /// Drops the dependencies of root `a` on itself and repeats of an earlier dependency's
  /// group. Both are skipped by pathThroughOthers anyway, so its search is unchanged; without
  /// this a long chain's group keeps one entry per member and each merge into it rescans them
  /// all, which made fusing an n-op chain O(n^2).
  void compactDeps(int a) {
    ++stamp_;
    mark_[a] = stamp_;
    std::vector<int> &d = deps_[a];
    size_t w = 0;
    for (int x : d) {
      int r = find(x);
      if (mark_[r] != stamp_) {
        mark_[r] = stamp_;
        d[w++] = x;
      }
    }
    d.resize(w);
  }

  /// Whether group `to` depends on group `from` through some third group.
  bool pathThroughOthers(int from, int to, bool &gaveUp) {
    std::vector<int> stack;
    std::unordered_set<int> visited;
    for (int d : deps_[to]) {
      int x = find(d);
      if (x != from && x != to && visited.insert(x).second)
        stack.push_back(x);
    }
    size_t budget = 20000;
    while (!stack.empty()) {
      int x = stack.back();
      stack.pop_back();
      if (maxPos_[x] < minPos_[from])
        continue;
      if (--budget == 0) {
        gaveUp = true;
        return true;
      }
      for (int d : deps_[x]) {
        int y = find(d);
        if (y == from)
          return true;
        if (y != to && y != x && visited.insert(y).second)
          stack.push_back(y);
      }
    }
    return false;
  }

  /// Whether groups `a` and `b` may be one kernel: the kernel-kind rules (ir/KernelRegion.h),
  /// then no cycle between kernels. `consumer` is the node that joins, for the reason.
  FusionDecision canMerge(int a, int b, const Node *consumer = nullptr) {
    if (FusionDecision kind = canJoin(region_[a], region_[b], consumer); !kind)
      return kind;
    // A Reduce kernel's ops read its reductions only where they broadcast over its rows:
    // every edge between the two groups, not only the joining consumer's, since a group
    // holds ops (a recomputed producer, an earlier consumer) whose own joins were refused.
    if (region_[a].kind == RegionKind::Reduce || region_[b].kind == RegionKind::Reduce) {
      const RegionSummary &red = region_[a].kind == RegionKind::Reduce ? region_[a] : region_[b];
      for (auto [from, to] : {std::pair(a, b), std::pair(b, a)})
        for (const ReductionRead &e : reductionReads_[from])
          if (find(pos_.at(e.second)) == to)
            if (FusionDecision d = canReadReduction(red, e.first, e.second); !d)
              return d;
    }
    // Two matmuls whose results meet (canJoin: siblings reading the same A) become one
    // kernel only where the target's GEMM kernel computes both products per tile.
    if (isGemm(a) && isGemm(b)) {
      if (!siblingGemm_)
        return FusionDecision::forbid(
            "sibling matmuls share a kernel only for a target whose GEMM kernel computes two "
            "products; none was given");
      if (FusionDecision d = siblingGemm_(region_[a].anchor, region_[b].anchor); !d)
        return d;
    }
    // The kernel's size caps: its op count and its parameters (ir/KernelRegion.h).
    if (FusionDecision size = budget_.check(a, b, [&](int i) { return find(i); }); !size)
      return size;
    bool gaveUp = false;
    if (pathThroughOthers(a, b, gaveUp) || pathThroughOthers(b, a, gaveUp))
      return FusionDecision::forbid(
          gaveUp ? "the kernel graph is too deep to prove that fusing creates no cycle"
                 : "fusing would create a cycle between kernels (a kernel in between reads "
                   "one and feeds the other)");
    return FusionDecision::allow();
  }

  void group() {
    const std::vector<Node *> &nodes = g_.nodes();
    size_t n = nodes.size();
    parent_.resize(n);
    deps_.assign(n, {});
    rawDeps_.assign(n, 0);
    mark_.assign(n, 0);
    minPos_.resize(n);
    maxPos_.resize(n);
    region_.resize(n);
    pos_.reserve(n * 2);
    for (size_t i = 0; i < n; ++i) {
      parent_[i] = static_cast<int>(i);
      minPos_[i] = maxPos_[i] = static_cast<int>(i);
      pos_[nodes[i]] = static_cast<int>(i);
    }
    for (size_t i = 0; i < n; ++i) {
      // A recomputed producer iterates over its consumer's shape (rootOf), and its own
      // smaller shape is kept for the kind rules.
      Node *root = nodes[i]->kind() == OpKind::MatMul ? nodes[i] : rootOf(nodes[i]);
      region_[i] = RegionSummary::of(root);
      if (root != nodes[i] && nodes[i]->shape() != region_[i].shape)
        region_[i].smaller.push_back(nodes[i]->shape());
    }
    budget_.init(nodes, pos_, [&](const Node *x) { return outputs_.count(x) > 0; });
    reductionReads_.assign(n, {});
    for (auto &[c, r] : root_)
      unite(pos_.at(c), pos_.at(r));
    // Every group's dependencies known before any merge: a recomputed producer is already
    // one group with its consumer, and a merge into that group must see the consumer's
    // other producers (later in program order), or it can close a cycle between kernels.
    // Likewise the reductions its members read in other groups (canMerge checks them).
    for (size_t i = 0; i < n; ++i) {
      int g = find(static_cast<int>(i));
      for (const Operand &o : nodes[i]->operands()) {
        if (!o.node || o.node->isInput())
          continue;
        int p = pos_.at(o.node);
        deps_[g].push_back(p);
        if (isReduction(o.node->kind()) && find(p) != g)
          reductionReads_[g].push_back({nodes[i], o.node});
      }
    }

    for (size_t i = 0; i < n; ++i) {
      Node *c = nodes[i];
      if (c->isInput())
        continue;
      llvm::SmallVector<Node *, 2> producers;
      for (const Operand &o : c->operands())
        if (o.node && !o.node->isInput() &&
            std::find(producers.begin(), producers.end(), o.node) == producers.end())
          producers.push_back(o.node);
      int me = find(static_cast<int>(i));
      rawDeps_[me] += producers.size();
      if (c->kind() == OpKind::MatMul) {
        for (Node *p : producers)
          reject(p, c,
                 p->kind() == OpKind::MatMul
                     ? "a matmul never fuses into another matmul kernel: it reads its operands "
                       "from memory"
                     : "a matmul reads its operands from memory, so its producer's kernel "
                       "stores them");
        continue;
      }
      // Epilogue fusion first: a matmul result's consumer joins the matmul's kernel.
      std::stable_sort(producers.begin(), producers.end(), [&](Node *x, Node *y) {
        return isGemm(find(pos_.at(x))) > isGemm(find(pos_.at(y)));
      });
      for (Node *p : producers) {
        int a = find(static_cast<int>(i)), b = find(pos_.at(p));
        if (a == b)
          continue;
        // An epilogue reads its other operands from memory: a second producer's kernel does
        // not join (fusion's policy; the kind rules are canMerge's).
        FusionDecision d =
            isGemm(a) && !isGemm(b)
                ? FusionDecision::forbid(fmt::format(
                      "{} is already a matmul epilogue, whose other operands are read from memory",
                      nodeLabel(c)))
                : canMerge(b, a, c);
        if (d) {
          if (explaining())
            note(p, c, true, whyFused(p, c, region_[b].kind, region_[a].kind));
          unite(a, b);
        } else {
          reject(p, c, d.explain());
        }
      }
    }
  }

  // --- 3. siblings reading the same tensor -------------------------------------------------
  void fuseSiblings() {
    for (Node *t : g_.nodes()) {
      if (t->type().bytes() == 0 || t->users().size() < 2)
        continue;
      int own = t->isInput() ? -1 : find(pos_.at(t));
      llvm::SmallVector<int, 4> targets;
      for (Node *u : t->users()) {
        int r = find(pos_.at(u));
        // Reduction kernels take their siblings through producer -> consumer edges only.
        if (r == own || isGemm(r) || region_[r].kind == RegionKind::Reduce)
          continue;
        bool merged = false;
        for (int &tg : targets) {
          tg = find(tg);
          if (tg == r) {
            merged = true;
            break;
          }
          if (region_[tg].shape == region_[r].shape && canMerge(tg, r)) {
            tg = unite(tg, r);
            merged = true;
            break;
          }
        }
        if (merged)
          continue;
        // A kernel at a cap takes no more siblings: make room for one that can.
        llvm::erase_if(targets, [&](int tg) { return budget_.full(find(tg)); });
        if (targets.size() < 8)
          targets.push_back(r);
      }
    }
  }

  // --- 4. kernels in topological order, each contiguous ---------------------------------
  void emitKernels() {
    const std::vector<Node *> nodes = g_.nodes();
    size_t n = nodes.size();
    std::vector<std::vector<int>> members(n), succ(n);
    std::vector<int> indeg(n, 0);
    std::vector<Node *> order;
    order.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      if (nodes[i]->isInput()) {
        order.push_back(nodes[i]);
        continue;
      }
      int r = find(static_cast<int>(i));
      members[r].push_back(static_cast<int>(i));
      for (const Operand &o : nodes[i]->operands())
        if (o.node && !o.node->isInput()) {
          int pr = find(pos_.at(o.node));
          if (pr != r) {
            succ[pr].push_back(r);
            ++indeg[r];
          }
        }
    }
    std::priority_queue<int, std::vector<int>, std::greater<int>> ready; // by first member
    std::vector<int> repOfFirst(n, -1);
    size_t groups = 0;
    for (size_t r = 0; r < n; ++r)
      if (!members[r].empty()) {
        ++groups;
        repOfFirst[members[r].front()] = static_cast<int>(r);
        if (indeg[r] == 0)
          ready.push(members[r].front());
      }
    size_t emitted = 0;
    while (!ready.empty()) {
      int r = repOfFirst[ready.top()];
      ready.pop();
      int k = g_.addKernel(fmt::format("k{}", emitted++));
      for (int m : members[r]) {
        nodes[m]->setKernel(k);
        order.push_back(nodes[m]);
      }
      for (int s : succ[r])
        if (--indeg[s] == 0)
          ready.push(members[s].front());
    }
    if (emitted != groups)
      fail("fuse: internal error: the kernel graph has a cycle");
    g_.setOrder(std::move(order));
  }

  void reject(Node *p, Node *c, std::string reason) {
    if (p->kind() == OpKind::MatMul) {
      // Counted once per matmul: reject runs for each consumer (users are fixed by now).
      auto [it, isNew] = consumerCount_.try_emplace(p, 0);
      if (isNew) {
        llvm::SmallDenseSet<Node *, 8> seen;
        for (Node *u : p->users())
          seen.insert(u);
        it->second = seen.size();
      }
      size_t consumers = it->second;
      if (consumers > 1)
        reason = fmt::format("matmul result has {} consumers: recomputing is impossible, "
                             "storing it costs {}; {}",
                             consumers, formatBytes(p->type().bytes()), reason);
    }
    note(p, c, false, std::move(reason));
  }

  /// The reason a producer -> consumer edge fused, for the log: which kind of kernel took the
  /// consumer and what the edge no longer moves through memory.
  std::string whyFused(const Node *p, const Node *c, RegionKind producer, RegionKind consumer) {
    bool stored = outputs_.count(p) > 0;
    std::string saved =
        stored ? fmt::format("{} is a graph output, written by the same kernel and not read back "
                             "(saves {})",
                             nodeLabel(p), formatBytes(p->type().bytes()))
               : fmt::format("{} stays in registers (saves writing and reading {})", nodeLabel(p),
                             formatBytes(2 * p->type().bytes()));
    if (producer == RegionKind::Gemm && consumer == RegionKind::Gemm)
      return fmt::format("as a sibling matmul: {} and the kernel's other matmul read the same A, "
                         "so one kernel computes both products per tile and {} joins them in "
                         "its epilogue; {}",
                         nodeLabel(p), nodeLabel(c), saved);
    if (producer == RegionKind::Gemm)
      return fmt::format("as {} epilogue: {} runs on the matmul's tile before the store; {}",
                         p->kind() == OpKind::MatMul ? "the matmul's" : "part of the matmul's",
                         nodeLabel(c), saved);
    if (producer == RegionKind::Reduce || consumer == RegionKind::Reduce)
      return fmt::format("into one row-reduction kernel: {} reads {} from the rows the "
                         "kernel holds; {}",
                         nodeLabel(c), nodeLabel(p), saved);
    if (p->shape() != c->shape())
      return fmt::format("{} broadcasts {} into its shape {} in the same kernel; {}", nodeLabel(c),
                         nodeLabel(p), c->type().str(), saved);
    return fmt::format("element by element over the same shape {}; {}", c->type().str(), saved);
  }

  bool explaining() const { return log_ && log_->withFused; }

  void note(Node *p, Node *c, bool fused, std::string reason) {
    if (log_)
      log_->edges.push_back({nodeLabel(p), nodeLabel(c), fused, std::move(reason)});
  }

  Graph &g_;
  FusionLog *log_;
  SiblingGemmPolicy siblingGemm_;
  std::unordered_set<const Node *> outputs_;
  std::unordered_map<Node *, Node *> root_; // recomputed node -> the consumer it lives with
  std::unordered_map<const Node *, int> pos_;
  std::unordered_map<const Node *, size_t> consumerCount_; // matmul -> distinct consumers
  std::vector<int> parent_;
  std::vector<std::vector<int>> deps_; // per root: members' producers (compacted on unite)
  std::vector<size_t> rawDeps_;        // per root: producer count before compaction
  std::vector<unsigned> mark_;         // compactDeps' scratch, by root
  unsigned stamp_ = 0;
  std::vector<int> minPos_, maxPos_;
  std::vector<RegionSummary> region_; // per group root: its kind and iteration shape
  /// A member of a group reading a reduction in another group (reader, reduction).
  using ReductionRead = std::pair<const Node *, const Node *>;
  std::vector<std::vector<ReductionRead>> reductionReads_; // per group root, compacted on unite
  RegionBudget budget_;               // per group root: its ops and parameters, capped
};

} // namespace

bool fuseGraph(Graph &g, FusionLog *log, const SiblingGemmPolicy &siblingGemm) {
  std::vector<Node *> before = g.nodes();
  std::vector<int> kernels;
  kernels.reserve(before.size());
  for (const Node *n : before)
    kernels.push_back(n->kernel());
  size_t numKernels = g.kernelNames().size();
  Fuser(g, log, siblingGemm).run();
  if (g.nodes() != before || g.kernelNames().size() != numKernels)
    return true;
  for (size_t i = 0; i < before.size(); ++i)
    if (before[i]->kernel() != kernels[i])
      return true;
  return false;
}

bool FusionPass::run(Graph &g) { return fuseGraph(g, ctx_.fusionLog, ctx_.siblingGemm); }

} // namespace kfuse
