#include "codegen/KernelSpec.h"

#include "codegen/KernelEmitter.h"

#include "ir/Error.h"
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
  return "pointwise";
}

std::vector<KernelSpec> buildKernelSpecs(const Graph &g, const Target &target,
                                         const GemmTuning *tuning) {
  // Group nodes: region k -> its nodes in program order; lone nodes get their own group.
  struct Group {
    std::string name;
    std::vector<const Node *> nodes;
  };
  std::vector<Group> groups;
  std::map<int, unsigned> regionGroup;
  llvm::DenseMap<const Node *, unsigned> groupOf;
  for (const Node *n : g.nodes()) {
    if (n->isInput())
      continue;
    unsigned gi;
    if (n->kernel() >= 0) {
      auto [it, inserted] = regionGroup.try_emplace(n->kernel(), groups.size());
      if (inserted) {
        std::string name = static_cast<size_t>(n->kernel()) < g.kernelNames().size()
                               ? g.kernelNames()[n->kernel()]
                               : fmt::format("kernel{}", n->kernel());
        groups.push_back({name, {}});
      }
      gi = it->second;
    } else {
      gi = groups.size();
      groups.push_back(
          {n->name().empty() ? fmt::format("{}{}", opName(n->kind()), n->id()) : n->name(), {}});
    }
    groups[gi].nodes.push_back(n);
    groupOf[n] = gi;
  }

  // Order groups so each follows the groups it reads from (Kahn, ties by first node).
  size_t ng = groups.size();
  std::vector<std::vector<unsigned>> succ(ng);
  std::vector<unsigned> indeg(ng, 0);
  for (unsigned gi = 0; gi < ng; ++gi) {
    std::vector<unsigned> preds;
    for (const Node *n : groups[gi].nodes)
      for (const Operand &op : n->operands())
        if (!op.isScalar() && !op.node->isInput()) {
          unsigned p = groupOf[op.node];
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

  // Every op's `.kf` text for the comments of its code, named as the printed graph names it
  // (one pass over the graph).
  NodePrinter print(g);
  std::vector<KernelSpec> specs;
  for (unsigned gi : order) {
    const Group &grp = groups[gi];
    KernelSpec k;
    k.index = specs.size();
    k.name = grp.name;
    k.mangled = fmt::format("kf{}_{}", k.index, mangle(grp.name));
    const Node *mm = nullptr;
    for (const Node *n : grp.nodes) {
      if (n->kind() == OpKind::MatMul) {
        if (mm)
          fail("kernel '{}': two matmuls in one kernel cannot be generated", grp.name);
        mm = n;
      } else if (!isElementwise(n->kind()))
        fail("kernel '{}': op '{}' cannot be generated", grp.name, opName(n->kind()));
    }
    if (mm && grp.nodes.front() != mm)
      fail("kernel '{}': a matmul kernel must start with its matmul (its epilogue follows)",
           grp.name);
    // Iteration shape: the broadcast of every op's shape in the kernel.
    Shape iter;
    for (const Node *n : grp.nodes)
      iter = broadcastOrThrow(grp.name, iter, n->shape());
    k.iterShape = iter;

    llvm::DenseMap<const Node *, unsigned> opIndex, inputIndex;
    if (mm) {
      if (mm->shape() != iter)
        fail("kernel '{}': the matmul epilogue iterates over {}, not the matmul's shape {}",
             grp.name, shapeToString(iter), shapeToString(mm->shape()));
      GemmSpec gemm = makeGemmSpec(mm, target);
      if (tuning)
        applyTuning(gemm, target, *tuning);
      k.kind = std::move(gemm);
      // A and B: read by the GEMM's own loads, never through the epilogue's index map.
      for (unsigned j = 0; j < 2; ++j) {
        SpecTensor t;
        t.type = mm->operand(j).node->type();
        t.nodeId = mm->operand(j).node->id();
        t.name = '%' + print.name(mm->operand(j).node);
        t.aligned = t.type.shape;
        k.inputs.push_back(t);
      }
      SpecOp op;
      op.kind = OpKind::MatMul;
      op.dtype = mm->dtype();
      op.nodeId = mm->id();
      op.text = print(*mm);
      op.args = {{SpecRef::Input, 0, 0.f}, {SpecRef::Input, 1, 0.f}};
      opIndex[mm] = 0;
      k.ops.push_back(std::move(op));
    }
    for (const Node *n : grp.nodes) {
      if (n == mm)
        continue;
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
            k.inputs.push_back(makeTensor(o.node, iter, print));
          r.kind = SpecRef::Input;
          r.index = jt->second;
        }
        op.args.push_back(r);
      }
      opIndex[n] = k.ops.size();
      k.ops.push_back(std::move(op));
    }
    // Outputs: values read outside this kernel or that are graph outputs.
    for (const Node *n : grp.nodes) {
      bool leaves = g.isOutput(n);
      for (const Node *u : n->users())
        if (groupOf.lookup(u) != gi)
          leaves = true;
      if (leaves)
        k.outputs.push_back({makeTensor(n, iter, print), opIndex[n]});
    }
    specs.push_back(std::move(k));
  }
  return specs;
}

} // namespace kfuse::codegen
