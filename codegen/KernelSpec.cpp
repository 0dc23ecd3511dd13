#include "codegen/KernelSpec.h"

#include "codegen/KernelEmitter.h"

#include "ir/Error.h"
#include "ir/KernelRegion.h"
#include "ir/Printer.h"

#include <algorithm>
#include <llvm/ADT/DenseMap.h>
#include <map>
#include <queue>

namespace kfuse::codegen {

std::string mangle(std::string_view s) {
  std::string out;
  for (char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
      out += c;
    else
      out += fmt::format("_{:02X}", static_cast<unsigned char>(c));
  }
  return out;
}

unsigned KernelSpec::vectorWidth() const {
  size_t widest = 0;
  for (const SpecTensor &t : inputs)
    if (t.full)
      widest = std::max(widest, dtypeSize(t.type.dtype));
  for (const SpecOutput &o : outputs)
    if (o.tensor.full)
      widest = std::max(widest, dtypeSize(o.tensor.type.dtype));
  // Tiny kernels gain nothing from vectors; keep them scalar (and their source simple).
  if (widest == 0 || numel() < 4096)
    return 1;
  return static_cast<unsigned>(16 / widest);
}

int64_t KernelSpec::bytesMoved() const {
  int64_t b = 0;
  // A GEMM whose epilogue also reads A or B lists that tensor twice; like the traffic model,
  // count each distinct tensor once (the second read is of data the kernel just streamed).
  std::vector<unsigned> seen;
  for (const SpecTensor &t : inputs) {
    if (std::find(seen.begin(), seen.end(), t.nodeId) != seen.end())
      continue;
    seen.push_back(t.nodeId);
    b += t.type.bytes();
  }
  for (const SpecOutput &o : outputs)
    b += o.tensor.type.bytes();
  return b;
}

double KernelSpec::flops() const { return emitterFor(*this).flops(*this); }

LaunchConfig KernelSpec::launchConfig(unsigned block, uint64_t maxBlocks) const {
  return emitterFor(*this).launch(*this, block, maxBlocks);
}

static SpecTensor makeTensor(const Node *n, const Shape &iter, const NodePrinter &print) {
  SpecTensor t;
  t.type = n->type();
  t.nodeId = n->id();
  t.name = '%' + print.name(n);
  t.aligned.assign(iter.size() - n->shape().size(), 1);
  t.aligned.append(n->shape().begin(), n->shape().end());
  t.full = t.aligned == iter;
  return t;
}

const char *kindName(const KernelKind &k) {
  if (const GemmSpec *g = std::get_if<GemmSpec>(&k))
    return gemmKernelName(g->kernel);
  if (std::holds_alternative<ReduceSpec>(k))
    return "reduce";
  return "pointwise";
}

namespace {

/// A kernel before its spec: a region's nodes in program order, or one lone node.
struct Group {
  std::string name;
  std::vector<const Node *> nodes;
};

struct Grouping {
  std::vector<Group> groups;
  llvm::DenseMap<const Node *, unsigned> groupOf;
};

/// Nodes with kernel() >= 0 form that region; any other non-input node is a group alone.
Grouping groupNodes(const Graph &g) {
  Grouping r;
  std::map<int, unsigned> regionGroup;
  for (const Node *n : g.nodes()) {
    if (n->isInput())
      continue;
    unsigned gi;
    if (n->kernel() >= 0) {
      auto [it, inserted] = regionGroup.try_emplace(n->kernel(), r.groups.size());
      if (inserted) {
        std::string name = static_cast<size_t>(n->kernel()) < g.kernelNames().size()
                               ? g.kernelNames()[n->kernel()]
                               : fmt::format("kernel{}", n->kernel());
        r.groups.push_back({name, {}});
      }
      gi = it->second;
    } else {
      gi = r.groups.size();
      r.groups.push_back(
          {n->name().empty() ? fmt::format("{}{}", opName(n->kind()), n->id()) : n->name(), {}});
    }
    r.groups[gi].nodes.push_back(n);
    r.groupOf[n] = gi;
  }
  return r;
}

/// The groups in an order where each follows the groups it reads from (Kahn, ties by
/// first node).
std::vector<unsigned> orderGroups(const Grouping &gr) {
  size_t ng = gr.groups.size();
  std::vector<std::vector<unsigned>> succ(ng);
  std::vector<unsigned> indeg(ng, 0);
  for (unsigned gi = 0; gi < ng; ++gi) {
    std::vector<unsigned> preds;
    for (const Node *n : gr.groups[gi].nodes)
      for (const Operand &op : n->operands())
        if (!op.isScalar() && !op.node->isInput()) {
          unsigned p = gr.groupOf.lookup(op.node);
          if (p != gi && std::find(preds.begin(), preds.end(), p) == preds.end())
            preds.push_back(p);
        }
    for (unsigned p : preds) {
      succ[p].push_back(gi);
      ++indeg[gi];
    }
  }
  std::priority_queue<unsigned, std::vector<unsigned>, std::greater<>> ready;
  for (unsigned gi = 0; gi < ng; ++gi)
    if (indeg[gi] == 0)
      ready.push(gi);
  std::vector<unsigned> order;
  while (!ready.empty()) {
    unsigned gi = ready.top();
    ready.pop();
    order.push_back(gi);
    for (unsigned s : succ[gi])
      if (--indeg[s] == 0)
        ready.push(s);
  }
  if (order.size() != ng)
    fail("kernel regions form a cycle: a kernel reads a value that depends on its own result");
  return order;
}

/// The matmul of a Gemm kernel: its A and B (read only by the GEMM's own loads, never
/// through the epilogue's index map) and op 0; with a sibling (a dual GEMM), its B as input
/// 2 and its product as op 1, both before any epilogue op.
void addMatmul(KernelSpec &k, const Node *mm, const Node *sibling, const Target &target,
               const GemmTuning *tuning, bool allowTf32,
               llvm::DenseMap<const Node *, unsigned> &opIndex, const NodePrinter &print) {
  GemmSpec gemm = makeGemmSpec(mm, target, allowTf32, sibling);
  if (tuning)
    applyTuning(gemm, target, *tuning);
  k.kind = std::move(gemm);
  auto addInput = [&](const Node *n) {
    SpecTensor t;
    t.type = n->type();
    t.nodeId = n->id();
    t.name = '%' + print.name(n);
    t.aligned = t.type.shape;
    k.inputs.push_back(t);
  };
  addInput(mm->operand(0).node);
  addInput(mm->operand(1).node);
  if (sibling)
    addInput(sibling->operand(1).node);
  unsigned j = 0;
  for (const Node *m : {mm, sibling}) {
    if (!m)
      continue;
    SpecOp op;
    op.kind = OpKind::MatMul;
    op.dtype = m->dtype();
    op.nodeId = m->id();
    op.text = print(*m);
    op.args = {{SpecRef::Input, 0, 0.f}, {SpecRef::Input, j == 0 ? 1u : 2u, 0.f}};
    opIndex[m] = j++;
    k.ops.push_back(std::move(op));
  }
}

/// An elementwise op: operands from earlier ops, literals, or the kernel's inputs.
void addElementwise(KernelSpec &k, const Node *n, llvm::DenseMap<const Node *, unsigned> &opIndex,
                    llvm::DenseMap<const Node *, unsigned> &inputIndex, const NodePrinter &print) {
  SpecOp op;
  op.kind = n->kind();
  op.dtype = n->dtype();
  op.nodeId = n->id();
  op.text = print(*n);
  for (const Operand &o : n->operands()) {
    SpecRef r;
    if (o.isScalar()) {
      r.kind = SpecRef::Literal;
      r.literal = static_cast<float>(o.scalar);
    } else if (auto it = opIndex.find(o.node); it != opIndex.end()) {
      r.kind = SpecRef::Op;
      r.index = it->second;
    } else {
      auto [jt, inserted] = inputIndex.try_emplace(o.node, k.inputs.size());
      if (inserted)
        k.inputs.push_back(makeTensor(o.node, k.iterShape, print));
      r.kind = SpecRef::Input;
      r.index = jt->second;
    }
    op.args.push_back(r);
  }
  opIndex[n] = k.ops.size();
  k.ops.push_back(std::move(op));
}

/// bf16 loads, stores and conversions need sm_80 (PTX's .bf16 types): a kernel that touches
/// bf16 on an older target is refused here, naming the op, rather than inside NVRTC.
void requireBf16Arch(const KernelSpec &k, const Target &target) {
  if (target.sm >= 80)
    return;
  auto refuse = [&](const std::string &what) {
    fail("kernel '{}': {} is bf16, which needs sm_80 or newer; the target is sm_{} (--arch)",
         k.name, what, target.sm);
  };
  for (const SpecOp &op : k.ops)
    if (op.dtype == DType::BF16)
      refuse(fmt::format("'{}'", op.text));
  for (const SpecTensor &t : k.inputs)
    if (t.type.dtype == DType::BF16)
      refuse(fmt::format("input {}", t.name));
}

KernelSpec buildSpec(const Graph &g, const Grouping &gr, unsigned gi, unsigned index,
                     const Target &target, const GemmTuning *tuning, bool allowTf32,
                     const NodePrinter &print) {
  const Group &grp = gr.groups[gi];
  // What the kernel is, by the rule fusion and the verifier apply too.
  RegionSummary region;
  if (FusionDecision d = classifyRegion(grp.nodes, &region); !d)
    fail("kernel '{}' cannot be generated: {}", grp.name, d.explain());
  KernelSpec k;
  k.index = index;
  k.name = grp.name;
  k.mangled = fmt::format("kf{}_{}", k.index, mangle(grp.name));
  k.iterShape = region.shape;
  llvm::DenseMap<const Node *, unsigned> opIndex, inputIndex;
  if (region.kind == RegionKind::Gemm)
    addMatmul(k, region.anchor, region.sibling, target, tuning, allowTf32, opIndex, print);
  for (const Node *n : grp.nodes)
    if (region.kind != RegionKind::Gemm || (n != region.anchor && n != region.sibling))
      addElementwise(k, n, opIndex, inputIndex, print); // reductions too: one operand
  // Outputs: values read outside this kernel or that are graph outputs.
  for (const Node *n : grp.nodes) {
    bool leaves = g.isOutput(n);
    for (const Node *u : n->users())
      if (gr.groupOf.lookup(u) != gi)
        leaves = true;
    if (leaves) {
      SpecTensor t = makeTensor(n, k.iterShape, print);
      if (region.kind == RegionKind::Reduce &&
          (broadcastsOverRows(region, n->shape()) || valueLevel(region, n) == RegionValue::RowOnly)) {
        // A per-row value (keepdims or not): one element per row, laid out as the rows are.
        t.aligned = reducedShape(region.shape, region.mask, true);
        t.full = false;
      }
      k.outputs.push_back({t, opIndex[n]});
    }
  }
  if (region.kind == RegionKind::Reduce) {
    std::vector<bool> rowOp;
    for (const Node *n : grp.nodes)
      rowOp.push_back(valueLevel(region, n) == RegionValue::Row ||
                      valueLevel(region, n) == RegionValue::RowOnly);
    k.kind = makeReduceSpec(k, region.mask, std::move(rowOp), target.sm >= 90, target.smCount);
  }
  requireBf16Arch(k, target);
  return k;
}

} // namespace

std::vector<KernelSpec> buildKernelSpecs(const Graph &g, const Target &target,
                                         const GemmTuning *tuning, bool allowTf32) {
  Grouping gr = groupNodes(g);
  // Every op's `.kf` text for the comments of its code, named as the printed graph names it
  // (one pass over the graph).
  NodePrinter print(g);
  std::vector<KernelSpec> specs;
  for (unsigned gi : orderGroups(gr))
    specs.push_back(
        buildSpec(g, gr, gi, static_cast<unsigned>(specs.size()), target, tuning, allowTf32, print));
  return specs;
}

} // namespace kfuse::codegen
