// The C API's .kf text (include/kfuse/kfuse.h): the graphs of a text or file, each handed out
// as a graph of its own (a copy) by name.
#include "capi/Api.h"

#include "ir/Parser.h"

using namespace kfuse;
using capi::failWith;
using capi::guard;
using capi::need;
using capi::quote;

namespace {

kfuse_graph_set_s &setArg(kfuse_graph_set s) { return *need(s, "graph set"); }

std::string graphNames(const kfuse_graph_set_s &s) {
  std::string names;
  for (const auto &g : s.graphs)
    names += fmt::format("{}{}", names.empty() ? "" : ", ", quote(g->name()));
  return names;
}

void handOut(std::vector<std::unique_ptr<Graph>> graphs, kfuse_graph_set *out) {
  auto s = std::make_unique<kfuse_graph_set_s>();
  s->graphs = std::move(graphs);
  *out = s.release();
}

} // namespace

extern "C" {

kfuse_status kfuse_parse_string(const char *text, const char *filename, kfuse_graph_set *out) {
  return guard("kfuse_parse_string", KFUSE_ERROR_PARSE, [&] {
    need(text, "text");
    need(out, "out");
    handOut(parseModule(text, filename ? filename : "<string>"), out);
  });
}

kfuse_status kfuse_parse_file(const char *path, kfuse_graph_set *out) {
  // A ParseError is KFUSE_ERROR_PARSE; the plain errors of parseFile are "cannot open/read".
  return guard("kfuse_parse_file", KFUSE_ERROR_IO, [&] {
    need(path, "path");
    need(out, "out");
    handOut(parseFile(path), out);
  });
}

kfuse_status kfuse_graph_set_destroy(kfuse_graph_set s) {
  delete s;
  return KFUSE_OK;
}

kfuse_status kfuse_graph_set_count(kfuse_graph_set s, size_t *n) {
  return guard("kfuse_graph_set_count", KFUSE_ERROR_INTERNAL,
               [&] { *need(n, "n") = setArg(s).graphs.size(); });
}

kfuse_status kfuse_graph_set_name(kfuse_graph_set s, size_t i, const char **name) {
  return guard("kfuse_graph_set_name", KFUSE_ERROR_INTERNAL, [&] {
    kfuse_graph_set_s &S = setArg(s);
    need(name, "name");
    capi::checkIndex(i, S.graphs.size(), "graph");
    *name = S.graphs[i]->name().c_str();
  });
}

kfuse_status kfuse_graph_set_get(kfuse_graph_set s, const char *name, kfuse_graph *out) {
  return guard("kfuse_graph_set_get", KFUSE_ERROR_INTERNAL, [&] {
    kfuse_graph_set_s &S = setArg(s);
    need(out, "out");
    const Graph *found = nullptr;
    if (!name) {
      if (S.graphs.size() != 1)
        failWith(KFUSE_ERROR_NOT_FOUND, "the text holds {} graphs ({}): name one",
                 S.graphs.size(), graphNames(S));
      found = S.graphs.front().get();
    }
    for (const auto &g : S.graphs)
      if (name && g->name() == name)
        found = g.get();
    if (!found)
      failWith(KFUSE_ERROR_NOT_FOUND, "no graph named '{}' (the text holds {})", quote(name),
               graphNames(S));
    auto g = std::make_unique<kfuse_graph_s>();
    g->graph = found->clone();
    *out = g.release();
  });
}

} // extern "C"
