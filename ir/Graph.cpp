#include "ir/Graph.h"
#include "ir/Reduction.h"

#include "ir/Error.h"

#include <llvm/ADT/DenseSet.h>

#include <algorithm>
#include <cassert>
#include <unordered_map>

namespace kfuse {

Graph::Graph(std::string name) : name_(std::move(name)) {}
Graph::~Graph() = default;

std::string nodeLabel(const Node *n) {
  return n->name().empty() ? fmt::format("{}#{}", opName(n->kind()), n->id()) : "%" + n->name();
}

Node *Graph::newNode(OpKind kind, TensorType type) {
  storage_.push_back(std::unique_ptr<Node>(new Node(this, nextId_++, kind, std::move(type))));
  Node *n = storage_.back().get();
  nodes(); // compact first, so that appending keeps the order valid
  order_.push_back(n);
  return n;
}

void Graph::addUse(Node *used, Node *user) { used->users_.push_back(user); }

void Graph::removeUse(Node *used, Node *user) {
  auto &u = used->users_;
  auto it = std::find(u.begin(), u.end(), user);
  assert(it != u.end() && "use list out of sync");
  u.erase(it);
}

Value Graph::input(std::string name, DType dtype, llvm::ArrayRef<int64_t> shape) {
  if (name.empty())
    fail("input: a graph input needs a name");
  if (inputNames_.lookup(name) != 0)
    fail("input: an input named '{}' already exists", excerpt(name));
  checkShape(fmt::format("input '{}'", excerpt(name)), shape);
  Node *n = newNode(OpKind::Input, TensorType{dtype, Shape(shape.begin(), shape.end())});
  ++inputNames_[name];
  n->name_ = std::move(name);
  inputs_.push_back(n);
  return n;
}

void Node::setName(std::string n) {
  if (isInput()) {
    auto &names = graph_->inputNames_;
    auto it = names.find(name_);
    assert(it != names.end() && it->second > 0 && "input name table out of sync");
    if (--it->second == 0)
      names.erase(it);
    ++names[n];
  }
  name_ = std::move(n);
}

static void requireTensor(OpKind kind, const Operand &o, unsigned i) {
  if (o.isScalar())
    fail("{}: operand {} must be a tensor, not a scalar literal", opName(kind), i);
}

TensorType Graph::inferType(OpKind kind, llvm::ArrayRef<Operand> ops, const Attrs &attrs) {
  return inferComplete(kind, ops, completeAttrs(kind, attrs));
}

TensorType Graph::inferComplete(OpKind kind, llvm::ArrayRef<Operand> ops, const Attrs &attrs) {
  std::string_view op = opName(kind);
  if (kind == OpKind::Input)
    fail("input: use Graph::input to declare an input");
  if (ops.size() != opArity(kind))
    fail("{}: expects {} operand{}, got {}", op, opArity(kind), opArity(kind) == 1 ? "" : "s",
         ops.size());
  switch (opClass(kind)) {
  case OpClass::Source:
    break;
  case OpClass::Unary:
    requireTensor(kind, ops[0], 0);
    return ops[0].node->type();
  case OpClass::Cast:
    requireTensor(kind, ops[0], 0);
    return TensorType{attrs.getDType(Attr::To), ops[0].node->shape()};
  case OpClass::Binary: {
    if (ops[0].isScalar() && ops[1].isScalar())
      fail("{}: at least one operand must be a tensor, both are scalar literals", op);
    if (ops[0].isScalar())
      return ops[1].node->type();
    if (ops[1].isScalar())
      return ops[0].node->type();
    const TensorType &a = ops[0].node->type(), &b = ops[1].node->type();
    if (a.dtype != b.dtype)
      fail("{}: dtypes {} and {} differ (operands {} and {}); cast one of them", op,
           dtypeName(a.dtype), dtypeName(b.dtype), a.str(), b.str());
    // Two shapes within the limit can broadcast to one far past it ([2^48, 1] + [1, 2^48]).
    Shape out = broadcastOrThrow(op, a.shape, b.shape);
    checkShape(op, out);
    return TensorType{a.dtype, out};
  }
  case OpClass::Contraction: {
    MatMulAttrs mm = MatMulAttrs::from(attrs);
    requireTensor(kind, ops[0], 0);
    requireTensor(kind, ops[1], 1);
    const TensorType &a = ops[0].node->type(), &b = ops[1].node->type();
    if (a.dtype != b.dtype)
      fail("matmul: dtypes {} and {} differ (operands {} and {}); cast one of them",
           dtypeName(a.dtype), dtypeName(b.dtype), a.str(), b.str());
    if (a.rank() < 2 || b.rank() < 2)
      fail("matmul: operands need rank >= 2, got {} and {}", a.str(), b.str());
    size_t ra = a.rank(), rb = b.rank();
    int64_t m = mm.transA ? a.shape[ra - 1] : a.shape[ra - 2];
    int64_t ka = mm.transA ? a.shape[ra - 2] : a.shape[ra - 1];
    int64_t kb = mm.transB ? b.shape[rb - 1] : b.shape[rb - 2];
    int64_t n = mm.transB ? b.shape[rb - 2] : b.shape[rb - 1];
    if (ka != kb)
      fail("matmul: inner dims differ: {}{} x {}{} (K {} vs {})", a.str(), mm.transA ? "^T" : "",
           b.str(), mm.transB ? "^T" : "", ka, kb);
    llvm::ArrayRef<int64_t> batchA = llvm::ArrayRef<int64_t>(a.shape).drop_back(2);
    llvm::ArrayRef<int64_t> batchB = llvm::ArrayRef<int64_t>(b.shape).drop_back(2);
    auto batch = broadcastShapes(batchA, batchB);
    if (!batch)
      fail("matmul: batch dims {} and {} do not broadcast (operands {} and {})",
           shapeToString(batchA), shapeToString(batchB), a.str(), b.str());
    Shape out = *batch;
    out.push_back(m);
    out.push_back(n);
    checkShape("matmul", out);
    return TensorType{a.dtype, out};
  }
  case OpClass::Reduction: {
    requireTensor(kind, ops[0], 0);
    const TensorType &in = ops[0].node->type();
    AxisMask mask = reductionMask(kind, in, attrs.getInts(Attr::Axes));
    Shape out = reducedShape(in.shape, mask, attrs.getBool(Attr::Keepdims));
    // Reducing an empty axis leaves the other dims: [2^40, 0, 2^40] -> [2^40, 2^40].
    checkShape(op, out);
    return TensorType{in.dtype, out};
  }
  }
  fail("{}: unsupported op", op);
}

Value Graph::create(OpKind kind, llvm::ArrayRef<Operand> operands, const Attrs &attrs) {
  for (const Operand &o : operands)
    if (o.node && &o.node->graph() != this)
      fail("{}: operand belongs to another graph ('{}')", opName(kind), o.node->graph().name());
  Attrs complete = completeAttrs(kind, attrs);
  TensorType t = inferComplete(kind, operands, complete);
  Node *n = newNode(kind, std::move(t));
  n->operands_.assign(operands.begin(), operands.end());
  n->attrs_ = std::move(complete);
  for (const Operand &o : operands)
    if (o.node)
      addUse(o.node, n);
  return n;
}

Value Graph::unary(OpKind kind, Node *a) {
  if (opClass(kind) != OpClass::Unary)
    fail("{}: is not a unary op", opName(kind));
  return create(kind, {Operand(a)});
}

Value Graph::binary(OpKind kind, Operand a, Operand b) {
  if (opClass(kind) != OpClass::Binary)
    fail("{}: is not a binary op", opName(kind));
  return create(kind, {a, b});
}

Value Graph::cast(Node *a, DType to) {
  Attrs attrs;
  attrs.set(Attr::To, to);
  return create(OpKind::Cast, {Operand(a)}, attrs);
}

Value Graph::matmul(Node *a, Node *b, MatMulAttrs attrs) {
  return create(OpKind::MatMul, {Operand(a), Operand(b)}, attrs.toAttrs());
}

Value Graph::reduce(OpKind kind, Node *a, IntList axes, bool keepdims) {
  if (opClass(kind) != OpClass::Reduction)
    fail("{}: is not a reduction", opName(kind));
  Attrs attrs;
  attrs.set(Attr::Axes, std::move(axes));
  attrs.set(Attr::Keepdims, keepdims);
  return create(kind, {Operand(a)}, attrs);
}

void Graph::output(Node *n) {
  if (!n || &n->graph() != this)
    fail("output: the value belongs to another graph");
  outputs_.push_back(n);
}

bool Graph::isOutput(const Node *n) const {
  return std::find(outputs_.begin(), outputs_.end(), n) != outputs_.end();
}

const std::vector<Node *> &Graph::nodes() const {
  if (orderDirty_) {
    std::erase_if(order_, [](Node *n) { return n->dead_; });
    orderDirty_ = false;
  }
  return order_;
}

Node *Graph::findNode(std::string_view name) const {
  for (Node *n : nodes())
    if (n->name() == name)
      return n;
  return nullptr;
}

void Graph::setOperand(Node *user, unsigned i, Operand op) {
  assert(i < user->operands_.size());
  Operand &slot = user->operands_[i];
  if (slot.node)
    removeUse(slot.node, user);
  slot = op;
  if (op.node)
    addUse(op.node, user);
}

void Graph::redirectUses(Node *from, llvm::ArrayRef<std::pair<Node *, Node *>> moves) {
  llvm::DenseSet<const Node *> moved;
  for (auto [user, to] : moves) {
    assert(to && to != from);
    for (Operand &o : user->operands_)
      if (o.node == from) {
        o.node = to;
        addUse(to, user);
        moved.insert(user);
      }
  }
  // setOperand removes one entry per operand slot, so every entry of a moved user goes.
  auto &us = from->users_;
  us.erase(std::remove_if(us.begin(), us.end(), [&](Node *u) { return moved.contains(u); }),
           us.end());
}

void Graph::replaceAllUsesWith(Node *from, Node *to) {
  assert(from != to);
  llvm::SmallVector<Node *, 4> users(from->users_.begin(), from->users_.end());
  from->users_.clear();
  for (Node *u : users)
    for (Operand &o : u->operands_)
      if (o.node == from) {
        o.node = to;
        addUse(to, u);
        break; // one use per users_ entry
      }
  for (Node *&o : outputs_)
    if (o == from)
      o = to;
}

void Graph::setOutput(unsigned i, Node *n) {
  assert(i < outputs_.size());
  outputs_[i] = n;
}

void Graph::erase(Node *n) {
  assert(!n->hasUsers() && "erasing a node that still has users");
  assert(!isOutput(n) && "erasing a graph output");
  assert(!n->isInput() && "erasing a graph input");
  for (Operand &o : n->operands_)
    if (o.node)
      removeUse(o.node, n);
  n->operands_.clear();
  n->dead_ = true;
  orderDirty_ = true;
}

void Graph::setOrder(std::vector<Node *> order) {
  assert(order.size() == nodes().size() && "setOrder needs a permutation of the live nodes");
  order_ = std::move(order);
  orderDirty_ = false;
}

void Graph::sortTopologically() {
  const std::vector<Node *> &cur = nodes();
  std::vector<Node *> out;
  out.reserve(cur.size());
  std::unordered_map<const Node *, uint8_t> state; // 1 = on stack, 2 = emitted
  state.reserve(cur.size() * 2);
  std::vector<std::pair<Node *, unsigned>> stack;
  for (Node *root : cur) {
    if (state[root] == 2)
      continue;
    stack.push_back({root, 0});
    state[root] = 1;
    while (!stack.empty()) {
      auto &[n, i] = stack.back();
      if (i < n->operands_.size()) {
        Node *op = n->operands_[i++].node;
        if (op && state[op] == 0) {
          state[op] = 1;
          stack.push_back({op, 0});
        }
        continue;
      }
      state[n] = 2;
      out.push_back(n);
      stack.pop_back();
    }
  }
  order_ = std::move(out);
}

int Graph::addKernel(std::string name) {
  kernels_.push_back(std::move(name));
  return static_cast<int>(kernels_.size()) - 1;
}

void Graph::clearKernels() {
  kernels_.clear();
  for (Node *n : nodes())
    n->kernel_ = -1;
}

bool Graph::removeEmptyKernels() {
  std::vector<int> remap(kernels_.size(), -1);
  for (Node *n : nodes())
    if (n->kernel_ >= 0)
      remap[n->kernel_] = 0;
  std::vector<std::string> kept;
  for (size_t k = 0; k < kernels_.size(); ++k)
    if (remap[k] == 0) {
      remap[k] = static_cast<int>(kept.size());
      kept.push_back(std::move(kernels_[k]));
    }
  if (kept.size() == kernels_.size()) {
    for (size_t k = 0; k < kernels_.size(); ++k) // nothing moved: restore the names
      kernels_[k] = std::move(kept[k]);
    return false;
  }
  for (Node *n : nodes())
    if (n->kernel_ >= 0)
      n->kernel_ = remap[n->kernel_];
  kernels_ = std::move(kept);
  return true;
}

std::unique_ptr<Graph> Graph::clone() const {
  auto g = std::make_unique<Graph>(name_);
  std::unordered_map<const Node *, Node *> map;
  map.reserve(nodes().size() * 2);
  for (Node *n : nodes()) {
    Node *c;
    if (n->isInput()) {
      c = g->input(n->name(), n->dtype(), n->shape());
    } else {
      llvm::SmallVector<Operand, 2> ops;
      for (const Operand &o : n->operands())
        ops.push_back(o.node ? Operand(map.at(o.node)) : o);
      c = g->create(n->kind(), ops, n->attrs());
      c->setName(n->name());
    }
    c->setKernel(n->kernel());
    c->id_ = n->id_; // the same ids: kernel specs and stored-value lists name nodes by id
    map[n] = c;
  }
  g->nextId_ = nextId_;
  for (Node *o : outputs_)
    g->output(map.at(o));
  g->kernels_ = kernels_;
  return g;
}

} // namespace kfuse
