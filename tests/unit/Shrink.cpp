#include "Shrink.h"

#include "ir/Error.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <set>
#include <unordered_map>

namespace kfuse::test {

namespace {

/// A graph as plain data, easy to edit: operand i is node ops[i], or the literal lits[i]
/// when ops[i] < 0.
struct SNode {
  OpKind kind = OpKind::Input;
  std::vector<int> ops;
  std::vector<double> lits;
  Attrs attrs;              ///< as the node stores them (a cast's dtype included)
  DType dtype = DType::F32; ///< inputs
  Shape shape;              ///< inputs
  std::string name;
  bool root = false; ///< kept although no output needs it (dead code the failure needs)
};

struct Spec {
  std::string name;
  std::vector<SNode> nodes;
  std::vector<int> outputs;
};

/// `keepDead`: nodes no one uses become roots, kept like outputs.
Spec extract(const Graph &g, bool keepDead) {
  Spec s;
  s.name = g.name();
  std::unordered_map<const Node *, int> index;
  for (const Node *n : g.nodes()) {
    SNode sn;
    sn.kind = n->kind();
    sn.attrs = n->attrs();
    sn.dtype = n->dtype();
    sn.shape = n->shape();
    sn.name = n->name();
    sn.root = keepDead && !n->isInput() && !n->hasUsers() && !g.isOutput(n);
    for (const Operand &o : n->operands()) {
      sn.ops.push_back(o.node ? index.at(o.node) : -1);
      sn.lits.push_back(o.node ? 0.0 : o.scalar);
    }
    index[n] = int(s.nodes.size());
    s.nodes.push_back(std::move(sn));
  }
  for (const Node *n : g.outputs())
    s.outputs.push_back(index.at(n));
  return s;
}

/// Builds `s`, inputs first, keeping only what the outputs and roots need; nullptr when it is
/// not a valid graph.
std::unique_ptr<Graph> build(const Spec &s) {
  std::vector<char> live(s.nodes.size(), 0);
  for (size_t i = 0; i < s.nodes.size(); ++i)
    live[i] = s.nodes[i].root;
  for (int o : s.outputs)
    live[o] = 1;
  for (size_t i = s.nodes.size(); i-- > 0;)
    if (live[i])
      for (int op : s.nodes[i].ops)
        if (op >= 0)
          live[op] = 1;
  auto g = std::make_unique<Graph>(s.name);
  std::vector<Node *> made(s.nodes.size(), nullptr);
  std::set<std::string> names;
  for (const SNode &n : s.nodes)
    if (!n.name.empty())
      names.insert(n.name);
  int fresh = 0;
  auto inputName = [&](const std::string &n) {
    if (!n.empty())
      return n;
    std::string c;
    do
      c = fmt::format("cut{}", fresh++);
    while (names.count(c));
    names.insert(c);
    return c;
  };
  try {
    for (size_t i = 0; i < s.nodes.size(); ++i)
      if (live[i] && s.nodes[i].kind == OpKind::Input)
        made[i] = g->input(inputName(s.nodes[i].name), s.nodes[i].dtype, s.nodes[i].shape);
    for (size_t i = 0; i < s.nodes.size(); ++i) {
      const SNode &n = s.nodes[i];
      if (!live[i] || n.kind == OpKind::Input)
        continue;
      std::vector<Operand> ops;
      for (size_t j = 0; j < n.ops.size(); ++j)
        ops.push_back(n.ops[j] >= 0 ? Operand(made[n.ops[j]]) : Operand::literal(n.lits[j]));
      made[i] = g->create(n.kind, ops, n.attrs);
      if (!n.name.empty())
        made[i]->setName(n.name);
    }
    for (int o : s.outputs)
      g->output(made[o]);
    verify(*g);
  } catch (const Error &) {
    return nullptr;
  }
  return g;
}

/// Every use of node `from` (operands and outputs) becomes a use of `to`.
void redirect(Spec &s, int from, int to) {
  if (s.nodes[from].root) {
    s.nodes[from].root = false;
    s.nodes[to].root = true;
  }
  for (SNode &n : s.nodes)
    for (int &op : n.ops)
      if (op == from)
        op = to;
  for (int &o : s.outputs)
    if (o == from)
      o = to;
}

/// Enumerates the candidates of one shrinking round, largest cuts first.
std::vector<Spec> candidates(const Spec &s, const Graph &g) {
  std::vector<Spec> out;
  int n = int(s.nodes.size());
  // Dead code kept because the failure needed it: try without each piece.
  for (int i = n - 1; i >= 0; --i)
    if (s.nodes[i].root) {
      Spec c = s;
      c.nodes[i].root = false;
      out.push_back(std::move(c));
    }
  if (s.outputs.size() > 1)
    for (size_t i = 0; i < s.outputs.size(); ++i) {
      Spec c = s;
      c.outputs.erase(c.outputs.begin() + long(i));
      out.push_back(std::move(c));
    }
  // A single output anywhere: cuts the graph to one node's producers.
  for (int i = 0; i < n; ++i)
    if (s.nodes[i].kind != OpKind::Input && (s.outputs.size() > 1 || s.outputs[0] != i)) {
      Spec c = s;
      c.outputs = {i};
      out.push_back(std::move(c));
    }
  const std::vector<Node *> &nodes = g.nodes();
  for (int i = n - 1; i >= 0; --i) {
    if (s.nodes[i].kind == OpKind::Input)
      continue;
    for (int op : s.nodes[i].ops)
      if (op >= 0 && nodes[op]->dtype() == nodes[i]->dtype()) {
        Spec c = s;
        redirect(c, i, op);
        out.push_back(std::move(c));
      }
  }
  for (int i = n - 1; i >= 0; --i) {
    if (s.nodes[i].kind == OpKind::Input)
      continue;
    Spec c = s;
    SNode in;
    in.dtype = nodes[i]->dtype();
    in.shape = nodes[i]->shape();
    c.nodes.push_back(in);
    redirect(c, i, int(c.nodes.size()) - 1);
    out.push_back(std::move(c));
  }
  for (int i = 0; i < n; ++i) {
    const SNode &sn = s.nodes[i];
    if (opClass(sn.kind) != OpClass::Binary)
      continue;
    for (size_t j = 0; j < 2; ++j)
      if (sn.ops[j] >= 0 && sn.ops[1 - j] >= 0)
        for (double lit : {1.0, 2.0}) {
          Spec c = s;
          c.nodes[i].ops[j] = -1;
          c.nodes[i].lits[j] = lit;
          out.push_back(std::move(c));
        }
  }
  std::set<int64_t> dims;
  for (const SNode &sn : s.nodes)
    if (sn.kind == OpKind::Input)
      for (int64_t d : sn.shape)
        if (d > 1)
          dims.insert(d);
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
    int64_t d = *it;
    std::set<int64_t> to = {1, d / 2, d - 1};
    for (int64_t t : to) {
      if (t < 1 || t >= d)
        continue;
      Spec c = s;
      for (SNode &sn : c.nodes)
        if (sn.kind == OpKind::Input)
          for (int64_t &x : sn.shape)
            if (x == d)
              x = t;
      out.push_back(std::move(c));
    }
  }
  for (int i = 0; i < n; ++i) {
    const SNode &sn = s.nodes[i];
    if (sn.kind != OpKind::Input)
      continue;
    for (size_t a = 0; a < sn.shape.size(); ++a)
      if (sn.shape[a] > 1) {
        Spec c = s;
        c.nodes[i].shape[a] = 1;
        out.push_back(std::move(c));
      }
    if (sn.shape.size() > 1) {
      Spec c = s;
      c.nodes[i].shape.erase(c.nodes[i].shape.begin());
      out.push_back(std::move(c));
    }
  }
  return out;
}

} // namespace

int64_t graphSize(const Graph &g) {
  int64_t ops = 0, elements = 0, ranks = 0;
  for (const Node *n : g.nodes()) {
    for (const Operand &o : n->operands())
      ops += o.node != nullptr;
    if (n->isInput()) {
      elements += n->type().numElements();
      ranks += int64_t(n->shape().size());
    }
  }
  int64_t count = int64_t(g.numNodes() + g.outputs().size());
  // Lexicographic: nodes and outputs, then tensor operands, then input elements and ranks.
  return (count << 44) | (std::min<int64_t>(ops, 4095) << 32) |
         (std::min<int64_t>(elements, (1 << 24) - 1) << 8) | std::min<int64_t>(ranks, 255);
}

ShrinkResult shrinkGraph(const Graph &g, const FailurePredicate &fails, int maxTries) {
  ShrinkResult r;
  auto check = [&](const Graph &c) {
    ++r.tried;
    try {
      return fails(c);
    } catch (const std::exception &) {
      return false;
    }
  };
  // A failure that needs nodes no output reads (a pass crashing on dead code, say) is
  // shrunk without pruning them; the candidates then remove unused nodes one at a time.
  std::unique_ptr<Graph> cur = build(extract(g, false));
  bool keepDead = !cur || !check(*cur);
  if (keepDead)
    cur = build(extract(g, true));
  if (!cur)
    cur = g.clone();
  bool progress = true;
  while (progress && r.tried < maxTries) {
    progress = false;
    Spec s = extract(*cur, keepDead);
    int64_t size = graphSize(*cur);
    for (Spec &c : candidates(s, *cur)) {
      if (r.tried >= maxTries)
        break;
      std::unique_ptr<Graph> cg = build(c);
      if (!cg || graphSize(*cg) >= size || !check(*cg))
        continue;
      cur = std::move(cg);
      ++r.accepted;
      progress = true;
      break;
    }
  }
  r.graph = std::move(cur);
  return r;
}

std::string reproducerDir(const std::string &fallback) {
  const char *d = std::getenv("KFUSE_REPRO_DIR");
  std::string dir = d && *d ? d : fallback;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  return dir;
}

std::string saveReproducer(const Graph &g, const std::string &name, const std::string &what,
                           const std::string &dir) {
  std::string path = (std::filesystem::path(dir) / (name + ".kf")).string();
  std::string text = fmt::format(
      "# kfuse reproducer, shrunk by tests/unit/Shrink.h: {}\n"
      "# To keep it as a regression test: copy it to tests/lit/regress/{}.kf and add RUN\n"
      "# lines that fail without the fix, as tests/lit/regress/README.md shows (outputs of\n"
      "# 'kfuse run --cpu' before and after 'kfuse opt -O2' compared with cmp).\n",
      what, name);
  text += printGraph(g);
  std::ofstream f(path);
  f << text;
  if (!f)
    fail("cannot write the reproducer '{}'", path);
  return path;
}

} // namespace kfuse::test
