#include "analysis/Dot.h"

#include "ir/Printer.h"
#include "passes/Fusion.h"
#include "analysis/Traffic.h"

#include <cassert>
#include <fmt/format.h>
#include <llvm/ADT/SmallPtrSet.h>

namespace kfuse {

namespace {

/// Length of the valid UTF-8 sequence starting at s[i] (2 to 4 bytes), 0 if it is not one.
/// Overlong forms, surrogates and code points past U+10FFFF are invalid, as Graphviz sees it.
size_t utf8Length(std::string_view s, size_t i) {
  auto byte = [&](size_t j) { return static_cast<unsigned char>(s[j]); };
  unsigned char c = byte(i);
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF; // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0)
      lo = 0xA0;
    if (c == 0xED)
      hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0)
      lo = 0x90;
    if (c == 0xF4)
      hi = 0x8F;
  } else {
    return 0;
  }
  if (i + len > s.size() || byte(i + 1) < lo || byte(i + 1) > hi)
    return 0;
  for (size_t j = 2; j < len; ++j)
    if (byte(i + j) < 0x80 || byte(i + j) > 0xBF)
      return 0;
  return len;
}

template <typename... Args>
void put(std::string &out, fmt::format_string<Args...> f, Args &&...args) {
  fmt::format_to(std::back_inserter(out), f, std::forward<Args>(args)...);
}

/// "%b = mul %a, 2.0" then the type: the op as .kf writes it, literals inline.
std::string opLabel(const Node *n) {
  std::string s = nodeLabel(n) + " = " + std::string(opName(n->kind()));
  const char *sep = " ";
  for (const Operand &o : n->operands()) {
    s += sep;
    s += o.node ? nodeLabel(o.node) : formatLiteral(o.scalar);
    sep = ", ";
  }
  appendAttrs(s, n->kind(), n->attrs());
  return s + "\n" + n->type().str();
}

std::string kernelLabel(const KernelTraffic &k) {
  return fmt::format("{}\n{} read, {} written\n{}, {}-bound", k.name,
                     formatBytes(double(k.bytesRead)), formatBytes(double(k.bytesWritten)),
                     formatSeconds(k.seconds), k.computeBound ? "compute" : "memory");
}

} // namespace

std::string dotQuote(std::string_view s) {
  std::string out = "\"";
  out.reserve(s.size() + 2);
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c == '\n') {
      out += "\\n";
      ++i;
    } else if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\\\x{:02x}", c); // `\\` is a literal backslash in a DOT label
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else if (size_t len = utf8Length(s, i)) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += fmt::format("\\\\x{:02x}", c);
      ++i;
    }
  }
  out += '"';
  return out;
}

namespace {

/// Per node id: its position in program order (the DOT id) and its kernel's index in the
/// plan's kernels. fusedTraffic numbers kernels by first appearance in program order, a
/// region by its name and a lone op as a kernel of its own; this numbers them the same way.
struct DotLayout {
  std::vector<size_t> pos;
  std::vector<int> slot;
};

DotLayout layoutKernels(const Graph &g, const TrafficPlan &plan) {
  const std::vector<Node *> &nodes = g.nodes();
  unsigned maxId = 0;
  for (const Node *n : nodes)
    maxId = std::max(maxId, n->id());
  DotLayout l{std::vector<size_t>(maxId + 1, 0), std::vector<int>(maxId + 1, -1)};
  std::vector<int> regionSlot(g.kernelNames().size(), -1);
  int numSlots = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node *n = nodes[i];
    l.pos[n->id()] = i;
    if (n->isInput())
      continue;
    int k = n->kernel();
    assert(k < static_cast<int>(regionSlot.size()) && "kernel index out of range: verify first");
    if (k >= 0 && regionSlot[k] < 0)
      regionSlot[k] = numSlots++;
    l.slot[n->id()] = k >= 0 ? regionSlot[k] : numSlots++;
  }
  assert(static_cast<size_t>(numSlots) == plan.kernels.size() && "kernels differ from Traffic");
  (void)plan;
  return l;
}

/// Nodes: inputs at the top level, each kernel's nodes inside its cluster (regions are
/// contiguous in a verified graph, so one pass opens and closes each cluster once).
void writeNodes(std::string &out, const Graph &g, const TrafficPlan &plan, const DotLayout &l) {
  const std::vector<Node *> &nodes = g.nodes();
  int open = -1;
  auto close = [&] {
    if (open >= 0)
      out += "  }\n";
    open = -1;
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node *n = nodes[i];
    if (n->isInput()) {
      close();
      put(out, "  n{} [label={}, shape=invhouse];\n", i,
          dotQuote("input " + nodeLabel(n) + "\n" + n->type().str()));
      continue;
    }
    int s = l.slot[n->id()];
    if (s != open) {
      close();
      const KernelTraffic &k = plan.kernels[s];
      put(out, "  subgraph cluster_{} {{\n    label={};\n    style={};\n", s,
          dotQuote(kernelLabel(k)),
          n->kernel() >= 0 ? "\"rounded,filled\";\n    fillcolor=\"#e8f0fa\""
                           : "\"rounded,dashed\"");
      open = s;
    }
    put(out, "    n{} [label={}];\n", i, dotQuote(opLabel(n)));
  }
  close();
  for (size_t o = 0; o < g.outputs().size(); ++o)
    put(out, "  out{} [label={}, shape=house];\n", o,
        dotQuote("output " + nodeLabel(g.outputs()[o])));
}

/// Edges: one per distinct operand tensor of each op. A kernel reads an external tensor
/// once however many of its ops use it, so only the first such edge carries the bytes as
/// traffic; the plain labels into a cluster add up to the kernel's bytes read.
void writeEdges(std::string &out, const Graph &g, const DotLayout &l) {
  const std::vector<Node *> &nodes = g.nodes();
  llvm::SmallPtrSet<const Node *, 8> readByKernel;
  int readSlot = -1;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node *n = nodes[i];
    if (n->isInput())
      continue;
    int s = l.slot[n->id()];
    if (s != readSlot) {
      readByKernel.clear();
      readSlot = s;
    }
    llvm::SmallVector<const Node *, 2> seen;
    for (const Operand &o : n->operands()) {
      if (!o.node || std::find(seen.begin(), seen.end(), o.node) != seen.end())
        continue;
      seen.push_back(o.node);
      size_t from = l.pos[o.node->id()];
      std::string bytes = formatBytes(double(o.node->type().bytes()));
      if (!o.node->isInput() && l.slot[o.node->id()] == s)
        put(out, "  n{} -> n{} [label={}, style=dashed, color=gray50, fontcolor=gray50];\n", from,
            i, dotQuote(bytes + " (in registers)"));
      else if (readByKernel.insert(o.node).second)
        put(out, "  n{} -> n{} [label={}];\n", from, i, dotQuote(bytes));
      else
        put(out, "  n{} -> n{} [label={}];\n", from, i,
            dotQuote(bytes + " (already read by this kernel)"));
    }
  }
  for (size_t o = 0; o < g.outputs().size(); ++o) {
    const Node *n = g.outputs()[o];
    put(out, "  n{} -> out{} [label={}];\n", l.pos[n->id()], o,
        dotQuote(formatBytes(double(n->type().bytes()))));
  }
}

} // namespace

std::string graphToDot(const Graph &g, const Target &d,
                       const std::vector<NamedEstimate> &estimates) {
  TrafficPlan plan = fusedTraffic(g, d);
  applyEstimates(plan, estimates, d);
  DotLayout layout = layoutKernels(g, plan);
  std::string out;
  out.reserve(g.nodes().size() * 160 + 256);
  put(out, "digraph {} {{\n", dotQuote(g.name()));
  put(out, "  label={};\n",
      dotQuote(fmt::format("{} on {} ({:.3g} TB/s, {:.4g} TFLOP/s)\n{}, {} moved ({} read, {} "
                           "written), {}",
                           g.name(), d.name, d.bytesPerSecond / 1e12, d.flopsPerSecond / 1e12,
                           plural(plan.launches(), "kernel"), formatBytes(double(plan.bytes())),
                           formatBytes(double(plan.bytesRead)),
                           formatBytes(double(plan.bytesWritten)), formatSeconds(plan.seconds))));
  put(out, "  labelloc=t;\n  node [shape=box, style=filled, fillcolor=white];\n");
  writeNodes(out, g, plan, layout);
  writeEdges(out, g, layout);
  out += "}\n";
  return out;
}

} // namespace kfuse
