// The C API's graphs and values (include/kfuse/kfuse.h): building through Graph::create,
// attributes in .kf syntax read by the parser's own value reader (parseAttrValue), and
// reading a graph back.
#include "capi/Api.h"

#include "ir/Attrs.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

#include <llvm/ADT/SmallVector.h>

using namespace kfuse;
using capi::failWith;
using capi::graphArg;
using capi::guard;
using capi::need;
using capi::quote;

kfuse_value_s *kfuse_graph_s::wrap(Node *n) {
  auto [it, fresh] = byNode.try_emplace(n, nullptr);
  if (fresh) {
    values.push_back(kfuse_value_s{n, 0});
    it->second = &values.back();
    known.insert(it->second);
  }
  return it->second;
}

kfuse_value_s *kfuse_graph_s::literal(double v) {
  values.push_back(kfuse_value_s{nullptr, v});
  known.insert(&values.back());
  return &values.back();
}

kfuse_value_s &kfuse_graph_s::value(kfuse_value v, std::string_view what) {
  need(v, what);
  if (!known.count(v))
    failWith(KFUSE_ERROR_INVALID_ARGUMENT,
             "{} is not a value of graph '{}' (a value of another graph, or of a destroyed one)",
             what, quote(graph->name()));
  return *v;
}

Node *kfuse_graph_s::tensor(kfuse_value v, std::string_view what) {
  kfuse_value_s &s = value(v, what);
  if (!s.node)
    failWith(KFUSE_ERROR_BAD_OPERANDS, "{} is a literal; only a tensor can be used here", what);
  return s.node;
}

static_assert(KFUSE_F32 == static_cast<int>(DType::F32) &&
                  KFUSE_F16 == static_cast<int>(DType::F16) &&
                  KFUSE_BF16 == static_cast<int>(DType::BF16),
              "kfuse_dtype and DType number the dtypes alike");

namespace {

std::string_view trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos)
    return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

/// "name=value, name=value": the attributes after an op's operands in a .kf line. Each value
/// is read by the parser (parseAttrValue), so it is written exactly as in a .kf file.
Attrs parseAttrText(OpKind kind, std::string_view text) {
  std::string_view op = opName(kind);
  Attrs attrs;
  auto bad = [&](const std::string &msg) {
    failWith(KFUSE_ERROR_BAD_ATTRIBUTE, "{}: {}", op, msg);
  };
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; !trim(text).empty() && i <= text.size(); ++i) {
    char c = i < text.size() ? text[i] : ',';
    depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    if (c != ',' || depth > 0)
      continue;
    std::string_view item = trim(text.substr(start, i - start));
    start = i + 1;
    if (item.empty())
      bad(fmt::format("an empty attribute in '{}' (a stray ',')", quote(text)));
    size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      bad(fmt::format("expected name=value in the attributes '{}', got '{}'", quote(text),
                      quote(item)));
    std::string_view name = trim(item.substr(0, eq)), valueText = trim(item.substr(eq + 1));
    std::optional<Attr> attr = parseAttrName(name);
    if (!attr)
      bad(fmt::format("unknown attribute '{}' (it takes {})", quote(name), opAttrList(kind)));
    if (!findOpAttr(kind, *attr))
      bad(fmt::format("has no attribute '{}' (it takes {})", quote(name), opAttrList(kind)));
    if (attrs.find(*attr))
      bad(fmt::format("duplicate attribute '{}'", quote(name)));
    try {
      attrs.set(*attr, parseAttrValue(valueText, attrType(*attr), name));
    } catch (const ParseError &e) {
      bad(e.message);
    }
  }
  try { // a required attribute left out
    completeAttrs(kind, attrs);
  } catch (const Error &e) {
    failWith(KFUSE_ERROR_BAD_ATTRIBUTE, "{}", e.what());
  }
  return attrs;
}

std::string opList() {
  std::string names;
#define KF_OP(E, name, arity, cls)                                                                 \
  if (OpKind::E != OpKind::Input)                                                                  \
    names += fmt::format("{}{}", names.empty() ? "" : ", ", #name);
#include "ir/Ops.def"
  return names;
}

OpKind opArg(const char *op) {
  std::optional<OpKind> k = parseOpKind(need(op, "op"));
  if (!k)
    failWith(KFUSE_ERROR_UNKNOWN_OP, "unknown op '{}' (kfuse has {})", quote(op), opList());
  if (*k == OpKind::Input)
    failWith(KFUSE_ERROR_UNKNOWN_OP, "'input' is not an op to apply: declare inputs with "
                                     "kfuse_graph_add_input");
  return *k;
}

/// The operands of `kind`, checked: their count, each a value of `g`, literals only where a
/// binary op takes one.
llvm::SmallVector<Operand, 2> operandsArg(kfuse_graph_s &g, OpKind kind,
                                          const kfuse_value *operands, size_t n) {
  std::string_view op = opName(kind);
  if (n && !operands)
    failWith(KFUSE_ERROR_INVALID_ARGUMENT, "{}: operands is NULL (n is {})", op, n);
  unsigned arity = opArity(kind);
  if (n != arity)
    failWith(KFUSE_ERROR_BAD_OPERANDS, "{}: expects {} operand{}, got {}", op, arity,
             arity == 1 ? "" : "s", n);
  llvm::SmallVector<Operand, 2> out;
  for (size_t i = 0; i < n; ++i) {
    kfuse_value_s &v = g.value(operands[i], fmt::format("{}: operand {}", op, i));
    if (v.node) {
      out.push_back(Operand(v.node));
      continue;
    }
    if (opClass(kind) != OpClass::Binary)
      failWith(KFUSE_ERROR_BAD_OPERANDS,
               "{}: operand {} is a literal; only binary ops (add, mul, ...) take literals", op, i);
    out.push_back(Operand::literal(v.literal));
  }
  if (opClass(kind) == OpClass::Binary && out[0].isScalar() && out[1].isScalar())
    failWith(KFUSE_ERROR_BAD_OPERANDS, "{}: at least one operand must be a tensor, both are "
                                       "literals", op);
  return out;
}

} // namespace

extern "C" {

kfuse_status kfuse_graph_create(const char *name, kfuse_graph *out) {
  return guard("kfuse_graph_create", KFUSE_ERROR_INVALID_ARGUMENT, [&] {
    need(name, "name");
    need(out, "out");
    auto g = std::make_unique<kfuse_graph_s>();
    g->graph = std::make_unique<Graph>(name);
    *out = g.release();
  });
}

kfuse_status kfuse_graph_destroy(kfuse_graph g) {
  delete g;
  return KFUSE_OK;
}

kfuse_status kfuse_graph_add_input(kfuse_graph g, const char *name, kfuse_dtype dtype,
                                   const int64_t *dims, size_t rank, kfuse_value *out) {
  return guard("kfuse_graph_add_input", KFUSE_ERROR_INVALID_ARGUMENT, [&] {
    kfuse_graph_s &G = graphArg(g);
    need(name, "name");
    need(out, "out");
    DType t = capi::dtypeArg(dtype);
    if (rank && !dims)
      failWith(KFUSE_ERROR_INVALID_ARGUMENT, "input '{}': dims is NULL (rank is {})",
               quote(name), rank);
    Value v = G.graph->input(name, t, llvm::ArrayRef<int64_t>(dims, rank));
    *out = G.wrap(v.node());
  });
}

kfuse_status kfuse_graph_add_op(kfuse_graph g, const char *op, const kfuse_value *operands,
                                size_t n, const char *attrs, kfuse_value *out) {
  // What Graph::create refuses after the checks here is a type error: shapes or dtypes.
  return guard("kfuse_graph_add_op", KFUSE_ERROR_TYPE, [&] {
    kfuse_graph_s &G = graphArg(g);
    OpKind kind = opArg(op);
    need(out, "out");
    llvm::SmallVector<Operand, 2> ops = operandsArg(G, kind, operands, n);
    Attrs a = parseAttrText(kind, attrs ? attrs : "");
    Value v = G.graph->create(kind, ops, a);
    *out = G.wrap(v.node());
  });
}

kfuse_status kfuse_graph_literal(kfuse_graph g, double v, kfuse_value *out) {
  return guard("kfuse_graph_literal", KFUSE_ERROR_INVALID_ARGUMENT, [&] {
    kfuse_graph_s &G = graphArg(g);
    *need(out, "out") = G.literal(v);
  });
}

kfuse_status kfuse_graph_add_output(kfuse_graph g, kfuse_value v) {
  return guard("kfuse_graph_add_output", KFUSE_ERROR_INVALID_ARGUMENT, [&] {
    kfuse_graph_s &G = graphArg(g);
    G.graph->output(G.tensor(v, "the value"));
  });
}

kfuse_status kfuse_graph_verify(kfuse_graph g) {
  return guard("kfuse_graph_verify", KFUSE_ERROR_INVALID_GRAPH,
               [&] { verify(*graphArg(g).graph); });
}

kfuse_status kfuse_graph_print(kfuse_graph g, const char **text) {
  return guard("kfuse_graph_print", KFUSE_ERROR_INTERNAL, [&] {
    kfuse_graph_s &G = graphArg(g);
    need(text, "text");
    G.printed = printGraph(*G.graph);
    *text = G.printed.c_str();
  });
}

kfuse_status kfuse_graph_name(kfuse_graph g, const char **name) {
  return guard("kfuse_graph_name", KFUSE_ERROR_INTERNAL, [&] {
    const Graph &G = *graphArg(g).graph;
    *need(name, "name") = G.name().c_str();
  });
}

kfuse_status kfuse_graph_num_inputs(kfuse_graph g, size_t *n) {
  return guard("kfuse_graph_num_inputs", KFUSE_ERROR_INTERNAL, [&] {
    const Graph &G = *graphArg(g).graph;
    *need(n, "n") = G.inputs().size();
  });
}

kfuse_status kfuse_graph_num_outputs(kfuse_graph g, size_t *n) {
  return guard("kfuse_graph_num_outputs", KFUSE_ERROR_INTERNAL, [&] {
    const Graph &G = *graphArg(g).graph;
    *need(n, "n") = G.outputs().size();
  });
}

kfuse_status kfuse_graph_input(kfuse_graph g, size_t i, kfuse_value *out) {
  return guard("kfuse_graph_input", KFUSE_ERROR_INTERNAL, [&] {
    kfuse_graph_s &G = graphArg(g);
    need(out, "out");
    capi::checkIndex(i, G.graph->inputs().size(), "input");
    *out = G.wrap(G.graph->inputs()[i]);
  });
}

kfuse_status kfuse_graph_output(kfuse_graph g, size_t i, kfuse_value *out) {
  return guard("kfuse_graph_output", KFUSE_ERROR_INTERNAL, [&] {
    kfuse_graph_s &G = graphArg(g);
    need(out, "out");
    capi::checkIndex(i, G.graph->outputs().size(), "output");
    *out = G.wrap(G.graph->outputs()[i]);
  });
}

kfuse_status kfuse_graph_find(kfuse_graph g, const char *name, kfuse_value *out) {
  return guard("kfuse_graph_find", KFUSE_ERROR_INTERNAL, [&] {
    kfuse_graph_s &G = graphArg(g);
    need(name, "name");
    need(out, "out");
    Node *n = *name ? G.graph->findNode(name) : nullptr;
    if (!n)
      failWith(KFUSE_ERROR_NOT_FOUND, "graph '{}' has no value named '{}'",
               quote(G.graph->name()), quote(name));
    *out = G.wrap(n);
  });
}

kfuse_status kfuse_value_set_name(kfuse_graph g, kfuse_value v, const char *name) {
  return guard("kfuse_value_set_name", KFUSE_ERROR_INVALID_ARGUMENT, [&] {
    kfuse_graph_s &G = graphArg(g);
    Node *n = G.tensor(v, "the value");
    need(name, "name");
    if (n->isInput() && !*name)
      failWith(KFUSE_ERROR_INVALID_ARGUMENT, "input '{}' needs a name", quote(n->name()));
    n->setName(name);
  });
}

kfuse_status kfuse_value_name(kfuse_graph g, kfuse_value v, const char **name) {
  return guard("kfuse_value_name", KFUSE_ERROR_INTERNAL, [&] {
    Node *n = graphArg(g).tensor(v, "the value");
    *need(name, "name") = n->name().c_str();
  });
}

kfuse_status kfuse_value_dtype(kfuse_graph g, kfuse_value v, kfuse_dtype *dtype) {
  return guard("kfuse_value_dtype", KFUSE_ERROR_INTERNAL, [&] {
    Node *n = graphArg(g).tensor(v, "the value");
    *need(dtype, "dtype") = static_cast<kfuse_dtype>(n->dtype());
  });
}

kfuse_status kfuse_value_shape(kfuse_graph g, kfuse_value v, int64_t *dims, size_t capacity,
                               size_t *rank) {
  return guard("kfuse_value_shape", KFUSE_ERROR_INTERNAL, [&] {
    Node *n = graphArg(g).tensor(v, "the value");
    need(rank, "rank");
    const Shape &s = n->shape();
    if (dims && capacity < s.size())
      failWith(KFUSE_ERROR_INVALID_ARGUMENT, "the value has rank {}, capacity is {}", s.size(),
               capacity);
    if (dims)
      std::copy(s.begin(), s.end(), dims);
    *rank = s.size();
  });
}

kfuse_status kfuse_value_bytes(kfuse_graph g, kfuse_value v, size_t *bytes) {
  return guard("kfuse_value_bytes", KFUSE_ERROR_INTERNAL, [&] {
    Node *n = graphArg(g).tensor(v, "the value");
    *need(bytes, "bytes") = static_cast<size_t>(n->type().bytes());
  });
}

} // extern "C"
