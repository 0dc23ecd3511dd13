#include "analysis/Traffic.h"

#include <algorithm>
#include <fmt/format.h>
#include <unordered_map>

namespace kfuse {

double nodeFlops(const Node *n) {
  if (n->isInput())
    return 0;
  double out = static_cast<double>(n->type().numElements());
  if (n->kind() != OpKind::MatMul)
    return out;
  const Shape &a = n->operand(0).node->shape();
  double k = static_cast<double>(n->matmulAttrs().transA ? a[a.size() - 2] : a[a.size() - 1]);
  return 2.0 * out * k;
}

/// The name codegen gives the kernel of a node outside every region (codegen/KernelSpec.cpp).
static std::string loneKernelName(const Node *n) {
  return n->name().empty() ? fmt::format("{}{}", opName(n->kind()), n->id()) : n->name();
}

static void finish(KernelTraffic &k, const Target &d) {
  // A matmul's FLOPs at its dtype's peak (exact f32: the FFMA rate), the rest at FFMA's.
  const double rate = d.peakFlops(k.hasMatmul ? k.matmulType : DType::F32);
  const double tMem = d.memorySeconds(double(k.bytes())), tFlop = k.flops / rate;
  k.seconds = std::max(tMem, tFlop) + d.kernelSeconds;
  k.computeBound = tFlop > tMem;
}

static void total(TrafficPlan &p, const Target &d) {
  for (const KernelTraffic &k : p.kernels) {
    p.bytesRead += k.bytesRead;
    p.bytesWritten += k.bytesWritten;
    p.flops += k.flops;
    p.seconds += k.seconds;
  }
  p.seconds = d.graphSeconds(p.seconds, p.kernels.size());
}

TrafficPlan unfusedTraffic(const Graph &g, const Target &d) {
  TrafficPlan p;
  size_t i = 0;
  for (const Node *n : g.nodes()) {
    if (n->isInput())
      continue;
    KernelTraffic k;
    k.name = fmt::format("op{}", i++);
    k.specName = loneKernelName(n);
    k.ops = 1;
    k.hasMatmul = n->kind() == OpKind::MatMul;
    k.matmulType = n->dtype();
    llvm::SmallVector<const Node *, 2> seen;
    for (const Operand &o : n->operands())
      if (o.node && std::find(seen.begin(), seen.end(), o.node) == seen.end()) {
        seen.push_back(o.node);
        k.bytesRead += o.node->type().bytes();
      }
    k.bytesWritten = n->type().bytes();
    k.flops = nodeFlops(n);
    finish(k, d);
    p.kernels.push_back(std::move(k));
  }
  total(p, d);
  return p;
}

TrafficPlan fusedTraffic(const Graph &g, const Target &d) {
  TrafficPlan p;
  // Kernel index per node: its region, or a fresh one for a node outside every region.
  std::unordered_map<const Node *, size_t> kernelOf;
  kernelOf.reserve(g.numNodes() * 2);
  std::vector<int> regionSlot(g.kernelNames().size(), -1);
  for (const Node *n : g.nodes()) {
    if (n->isInput())
      continue;
    size_t slot;
    if (n->kernel() >= 0 && regionSlot[n->kernel()] >= 0) {
      slot = regionSlot[n->kernel()];
    } else {
      slot = p.kernels.size();
      KernelTraffic k;
      k.name = n->kernel() >= 0 ? g.kernelNames()[n->kernel()]
                                : fmt::format("{}#{}", opName(n->kind()), n->id());
      k.specName = n->kernel() >= 0 ? k.name : loneKernelName(n);
      if (n->kernel() >= 0)
        regionSlot[n->kernel()] = static_cast<int>(slot);
      p.kernels.push_back(std::move(k));
    }
    kernelOf[n] = slot;
    KernelTraffic &k = p.kernels[slot];
    ++k.ops;
    if (n->kind() == OpKind::MatMul) {
      k.hasMatmul = true;
      k.matmulType = n->dtype();
    }
    k.flops += nodeFlops(n);
  }
  // Reads: each external tensor once per kernel. Writes: each value leaving its kernel.
  std::vector<std::vector<const Node *>> readsOf(p.kernels.size());
  for (const Node *n : g.nodes()) {
    if (n->isInput())
      continue;
    size_t k = kernelOf[n];
    for (const Operand &o : n->operands()) {
      if (!o.node)
        continue;
      auto it = kernelOf.find(o.node);
      if (it != kernelOf.end() && it->second == k)
        continue;
      readsOf[k].push_back(o.node);
    }
  }
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    auto &r = readsOf[k];
    std::sort(r.begin(), r.end());
    r.erase(std::unique(r.begin(), r.end()), r.end());
    for (const Node *t : r)
      p.kernels[k].bytesRead += t->type().bytes();
  }
  std::vector<const Node *> outs(g.outputs().begin(), g.outputs().end());
  std::sort(outs.begin(), outs.end());
  for (const Node *n : g.nodes()) {
    if (n->isInput())
      continue;
    size_t k = kernelOf[n];
    bool leaves = std::binary_search(outs.begin(), outs.end(), n);
    for (const Node *u : n->users())
      if (kernelOf[u] != k)
        leaves = true;
    if (leaves)
      p.kernels[k].bytesWritten += n->type().bytes();
  }
  for (KernelTraffic &k : p.kernels)
    finish(k, d);
  total(p, d);
  return p;
}

bool estimatesDiffer(const Graph &g) {
  if (g.numNodes() > 20000)
    return false;
  for (const Node *n : g.nodes())
    if (n->kind() == OpKind::MatMul || isReduction(n->kind()))
      return true;
  return false;
}

void applyEstimates(TrafficPlan &p, const std::vector<NamedEstimate> &estimates,
                    const Target &d) {
  std::unordered_map<std::string, const NamedEstimate *> byName;
  for (const NamedEstimate &e : estimates)
    byName[e.name] = &e;
  p.seconds = 0;
  for (KernelTraffic &k : p.kernels) {
    auto it = byName.find(k.specName);
    if (it != byName.end()) {
      k.seconds = it->second->seconds;
      k.computeBound = it->second->computeBound;
    }
    p.seconds += k.seconds;
  }
  p.seconds = d.graphSeconds(p.seconds, p.kernels.size());
}

} // namespace kfuse
