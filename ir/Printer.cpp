#include "ir/Printer.h"

#include <cmath>
#include <deque>
#include <fmt/format.h>
#include <llvm/ADT/DenseSet.h>
#include <llvm/ADT/StringRef.h>

namespace kfuse {

std::string formatLiteral(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v < 0 ? "-inf" : "inf";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s;
}

namespace {

bool isNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.';
}

/// "bf16[64, 4096]" appended without temporaries (the printer's hot path).
void appendType(std::string &out, const TensorType &t) {
  out += dtypeName(t.dtype);
  out += '[';
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (i)
      out += ", ";
    fmt::format_to(std::back_inserter(out), "{}", t.shape[i]);
  }
  out += ']';
}

/// A graph or kernel name as the lexer reads a word: [A-Za-z_][A-Za-z0-9_.]*.
std::string validIdent(const std::string &s, std::string_view fallback) {
  if (s.empty())
    return std::string(fallback);
  std::string out;
  char first = s[0];
  if (!((first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z') || first == '_'))
    out += '_';
  for (char c : s)
    out += isNameChar(c) ? c : '_';
  return out;
}

} // namespace

/// Assigns every node the name it is printed with: its own where valid and unique, else
/// the first free number (or a sanitized, uniquified form of an invalid name). Indexed by
/// node id, so naming a large graph costs one pass and one hash set.
class NodePrinter::Namer {
public:
  explicit Namer(const Graph &g) : graph_(&g) {
    const std::vector<Node *> &nodes = g.nodes();
    unsigned maxId = 0;
    for (const Node *n : nodes)
      maxId = std::max(maxId, n->id());
    names_.assign(nodes.empty() ? 0 : maxId + 1, nullptr);
    llvm::DenseSet<llvm::StringRef> used;
    used.reserve(nodes.size());
    std::vector<const Node *> pending; // nodes that need a generated name
    for (const Node *n : nodes) {
      const std::string &name = n->name();
      bool valid = !name.empty();
      for (char c : name)
        valid = valid && isNameChar(c);
      if (valid && used.insert(name).second)
        names_[n->id()] = &name;
      else
        pending.push_back(n);
    }
    unsigned counter = 0;
    for (const Node *n : pending) {
      std::string base;
      for (char c : n->name())
        base += isNameChar(c) ? c : '_';
      std::string candidate;
      if (base.empty()) {
        do
          candidate = std::to_string(counter++);
        while (used.count(candidate));
      } else {
        unsigned suffix = 1;
        candidate = base;
        while (used.count(candidate))
          candidate = fmt::format("{}.{}", base, suffix++);
      }
      generated_.push_back(std::move(candidate));
      used.insert(generated_.back());
      names_[n->id()] = &generated_.back();
    }
  }

  /// A node outside the graph (only in a graph that fails the verifier) prints as `%?`.
  const std::string &operator()(const Node *n) const {
    static const std::string unknown = "?";
    if (n->id() >= names_.size() || !names_[n->id()] || &n->graph() != graph_)
      return unknown;
    return *names_[n->id()];
  }

private:
  std::vector<const std::string *> names_;
  std::deque<std::string> generated_; // stable addresses
  const Graph *graph_ = nullptr;
};

NodePrinter::NodePrinter(const Graph &g) : namer_(std::make_unique<Namer>(g)) {}
NodePrinter::~NodePrinter() = default;

const std::string &NodePrinter::name(const Node *n) const { return (*namer_)(n); }

void NodePrinter::append(std::string &out, const Node &n) const {
  out += '%';
  out += name(&n);
  out += " = ";
  out += opName(n.kind());
  if (n.isInput()) {
    out += ' ';
    appendType(out, n.type());
    return;
  }
  const char *sep = " ";
  for (const Operand &o : n.operands()) {
    out += sep;
    if (o.node) {
      out += '%';
      out += name(o.node);
    } else {
      out += formatLiteral(o.scalar);
    }
    sep = ", ";
  }
  appendAttrs(out, n.kind(), n.attrs());
}

std::string NodePrinter::operator()(const Node &n) const {
  std::string out;
  append(out, n);
  return out;
}

std::string printGraph(const Graph &g) {
  NodePrinter print(g);
  std::string out;
  out.reserve(g.numNodes() * 48 + 64);
  fmt::format_to(std::back_inserter(out), "graph {} {{\n", validIdent(g.name(), "main"));
  llvm::ArrayRef<std::string> kernels = g.kernelNames();
  int open = -1;
  for (const Node *n : g.nodes()) {
    int k = n->kernel() >= 0 && n->kernel() < static_cast<int>(kernels.size()) ? n->kernel() : -1;
    if (k != open) {
      if (open >= 0)
        out += "  }\n";
      if (k >= 0)
        fmt::format_to(std::back_inserter(out), "  kernel {} {{\n",
                       validIdent(kernels[k], fmt::format("k{}", k)));
      open = k;
    }
    out += open >= 0 ? "    " : "  ";
    print.append(out, *n);
    if (!n->isInput()) {
      out += "  # ";
      appendType(out, n->type());
    }
    out += '\n';
  }
  if (open >= 0)
    out += "  }\n";
  out += "  output";
  const char *sep = " ";
  for (const Node *o : g.outputs()) {
    out += sep;
    out += '%';
    out += print.name(o);
    sep = ", ";
  }
  out += "\n}\n";
  return out;
}

std::string printModule(llvm::ArrayRef<const Graph *> graphs) {
  std::string out;
  for (size_t i = 0; i < graphs.size(); ++i) {
    if (i)
      out += '\n';
    out += printGraph(*graphs[i]);
  }
  return out;
}

} // namespace kfuse
