#pragma once
/// The kfuse IR: a Graph owns Nodes; each Node computes one tensor (its TensorType) from
/// operands that are other Nodes or scalar literals, and knows its users. Inputs are named
/// and ordered; outputs are ordered and may also feed other ops. After fusion each Node
/// may belong to a kernel region (`kernel()` >= 0), and the graph lists the regions' names.
///
/// Value is the user's handle on a Node: it makes the builder API read like the math,
/// `gelu_tanh(matmul(x, w, {.transB = true}) + b)` (see ir/Builder.h).
#include "ir/Attrs.h"
#include "ir/Op.h"
#include "ir/Shape.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringMap.h>
#include <memory>
#include <string>
#include <vector>

namespace kfuse {

class Graph;
class Node;

/// One operand: a tensor (node != nullptr) or a scalar literal of the other operand's dtype.
struct Operand {
  Node *node = nullptr;
  double scalar = 0.0;

  Operand() = default;
  Operand(Node *n) : node(n) {}
  static Operand literal(double v) {
    Operand o;
    o.scalar = v;
    return o;
  }
  bool isScalar() const { return node == nullptr; }
};

/// matmul's attributes as a builder convenience (`matmul(x, w, {.transB = true})`) and a
/// typed view for codegen: read A as [..., K, M] / B as [..., N, K]. Nodes store Attrs.
struct MatMulAttrs {
  bool transA = false;
  bool transB = false;

  Attrs toAttrs() const {
    Attrs a;
    a.set(Attr::TransA, transA).set(Attr::TransB, transB);
    return a;
  }
  /// Unset attributes read as their defaults (false).
  static MatMulAttrs from(const Attrs &a) {
    const AttrValue *ta = a.find(Attr::TransA), *tb = a.find(Attr::TransB);
    return {ta && ta->getBool(), tb && tb->getBool()};
  }
};

class Node {
public:
  OpKind kind() const { return kind_; }
  OpClass opClass() const { return kfuse::opClass(kind_); }
  const TensorType &type() const { return type_; }
  DType dtype() const { return type_.dtype; }
  const Shape &shape() const { return type_.shape; }
  llvm::ArrayRef<Operand> operands() const { return operands_; }
  const Operand &operand(unsigned i) const { return operands_[i]; }
  unsigned numOperands() const { return operands_.size(); }
  /// One entry per use (a node that reads this one twice appears twice).
  llvm::ArrayRef<Node *> users() const { return users_; }
  bool hasUsers() const { return !users_.empty(); }
  /// Every attribute the op declares, defaults filled in (see ir/Attrs.h).
  const Attrs &attrs() const { return attrs_; }
  /// A typed view of a matmul's attributes.
  MatMulAttrs matmulAttrs() const { return MatMulAttrs::from(attrs_); }
  bool isInput() const { return kind_ == OpKind::Input; }
  /// The SSA name without '%'; may be empty for nodes built through the API.
  const std::string &name() const { return name_; }
  /// Renaming an input keeps the graph's table of input names up to date.
  void setName(std::string n);
  /// Unique and stable within the graph (creation order), never reused.
  unsigned id() const { return id_; }
  /// Kernel region this node belongs to after fusion, -1 if none.
  int kernel() const { return kernel_; }
  void setKernel(int k) { kernel_ = k; }
  Graph &graph() const { return *graph_; }

private:
  friend class Graph;
  Node(Graph *g, unsigned id, OpKind k, TensorType t)
      : graph_(g), id_(id), kind_(k), type_(std::move(t)) {}

  Graph *graph_;
  unsigned id_;
  OpKind kind_;
  TensorType type_;
  llvm::SmallVector<Operand, 2> operands_;
  llvm::SmallVector<Node *, 2> users_;
  Attrs attrs_;
  std::string name_;
  int kernel_ = -1;
  bool dead_ = false;
};

/// "%name" for a named node, "kind#id" otherwise: how decisions and errors name nodes.
std::string nodeLabel(const Node *n);

/// A handle on a Node for the builder API; converts to and from Node*.
class Value {
public:
  Value(Node *n) : node_(n) {}
  Node *node() const { return node_; }
  operator Node *() const { return node_; }
  Node *operator->() const { return node_; }
  Graph &graph() const { return node_->graph(); }
  const TensorType &type() const { return node_->type(); }

private:
  Node *node_;
};

class Graph {
  friend class Node; // Node::setName renames inputs in inputNames_

public:
  explicit Graph(std::string name = "main");
  ~Graph();
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  const std::string &name() const { return name_; }
  void setName(std::string n) { name_ = std::move(n); }

  // --- building: each call infers the result type and throws kfuse::Error on bad input,
  //     naming the op and the shapes or dtypes.
  Value input(std::string name, DType dtype, llvm::ArrayRef<int64_t> shape);
  Value unary(OpKind kind, Node *a);
  Value binary(OpKind kind, Operand a, Operand b);
  Value cast(Node *a, DType to);
  Value matmul(Node *a, Node *b, MatMulAttrs attrs = {});
  /// sum, mean, amax or amin of `a` over `axes` (ir/Reduction.h).
  Value reduce(OpKind kind, Node *a, IntList axes, bool keepdims = false);
  /// Generic form used by the parser, passes and clone: dispatches on the op's class.
  /// `attrs` may leave out attributes that have a default (see completeAttrs).
  Value create(OpKind kind, llvm::ArrayRef<Operand> operands, const Attrs &attrs = {});
  void output(Node *n);

  /// The result type `kind` would have on these operands and attributes; throws like the
  /// builders.
  static TensorType inferType(OpKind kind, llvm::ArrayRef<Operand> operands, const Attrs &attrs);

  // --- reading
  llvm::ArrayRef<Node *> inputs() const { return inputs_; }
  llvm::ArrayRef<Node *> outputs() const { return outputs_; }
  bool isOutput(const Node *n) const;
  /// Live nodes in program order, which is always topological for a verified graph.
  const std::vector<Node *> &nodes() const;
  size_t numNodes() const { return nodes().size(); }
  Node *findNode(std::string_view name) const;

  // --- rewriting
  void setOperand(Node *user, unsigned i, Operand op);
  /// For each (user, to) in order: every operand of `user` that reads `from` reads `to`
  /// instead. One pass over from's use list, where setOperand per use would rescan it each
  /// time; the result (use-list orders included) is the same as setOperand in that order.
  void redirectUses(Node *from, llvm::ArrayRef<std::pair<Node *, Node *>> moves);
  /// Every use of `from` (operands and outputs) becomes a use of `to`.
  void replaceAllUsesWith(Node *from, Node *to);
  void setOutput(unsigned i, Node *n);
  /// Removes a node that has no users and is not an output.
  void erase(Node *n);
  /// Reorders the live nodes: `order` must be a permutation of nodes().
  void setOrder(std::vector<Node *> order);
  /// Reorders so every node follows its operands, keeping the current order otherwise
  /// where possible (iterative DFS, no recursion). Inputs stay first, in their order.
  void sortTopologically();

  // --- kernel regions (the fused form)
  int addKernel(std::string name);
  llvm::ArrayRef<std::string> kernelNames() const { return kernels_; }
  void clearKernels();
  /// Drops regions that no live node belongs to any more (a pass that erased or merged
  /// their nodes leaves them empty, which the verifier rejects) and renumbers the rest,
  /// keeping their order. Returns whether any was dropped.
  bool removeEmptyKernels();

  /// A deep copy with the same names, node ids, order, outputs and kernel regions.
  std::unique_ptr<Graph> clone() const;

private:
  /// inferType on attributes already completed (every declared one present).
  static TensorType inferComplete(OpKind kind, llvm::ArrayRef<Operand> operands,
                                  const Attrs &attrs);
  Node *newNode(OpKind kind, TensorType type);
  void addUse(Node *used, Node *user);
  void removeUse(Node *used, Node *user);

  std::string name_;
  std::vector<std::unique_ptr<Node>> storage_;
  mutable std::vector<Node *> order_;
  mutable bool orderDirty_ = false;
  std::vector<Node *> inputs_;
  /// How many inputs bear each name, so input() refuses a taken name in O(1); a scan of
  /// inputs_ made building a graph of 10^6 inputs quadratic. A count, not a set, because
  /// Node::setName may give two inputs one name (the verifier rejects that graph).
  llvm::StringMap<unsigned> inputNames_;
  std::vector<Node *> outputs_;
  std::vector<std::string> kernels_;
  unsigned nextId_ = 0;
};

} // namespace kfuse
