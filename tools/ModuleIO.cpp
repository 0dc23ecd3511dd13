#include "tools/ModuleIO.h"

#include "ir/Error.h"
#include "ir/InputFile.h"
#include "ir/LiteralCheck.h"
#include "ir/Parser.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fmt/core.h>

namespace kfuse::tool {

void warnAboutLiterals(const std::vector<std::unique_ptr<Graph>> &module) {
  for (const auto &g : module)
    for (const std::string &w : literalOverflowWarnings(*g))
      fmt::print(stderr, "kfuse: warning: {}\n", w);
}

std::vector<std::unique_ptr<Graph>> loadModuleFile(const std::string &path) {
  std::vector<std::unique_ptr<Graph>> module = parseFile(path);
  warnAboutLiterals(module);
  return module;
}

std::vector<std::unique_ptr<Graph>> loadModule(const std::string &path) {
  if (path != "-")
    return loadModuleFile(path);
  std::vector<std::unique_ptr<Graph>> module =
      parseModule(readModuleStream(0, "<stdin>", kMaxModuleBytes), "<stdin>");
  warnAboutLiterals(module);
  return module;
}

Graph &selectGraph(const std::vector<std::unique_ptr<Graph>> &module, const std::string &file,
                   const std::string &name) {
  if (module.empty())
    fail("'{}' holds no graph", file);
  if (name.empty())
    return *module.front();
  std::string names;
  for (const auto &g : module) {
    if (g->name() == name)
      return *g;
    names += (names.empty() ? "" : ", ") + g->name();
  }
  fail("'{}' has no graph named '{}' (it has {})", file, name, names);
}

void writeText(const std::string &path, const std::string &text) {
  if (path.empty() || path == "-") {
    errno = 0;
    bool ok = std::fwrite(text.data(), 1, text.size(), stdout) == text.size();
    if (!(std::fflush(stdout) == 0 && ok))
      fail("cannot write to stdout: {}", errno ? std::strerror(errno) : "write error");
    return;
  }
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    fail("cannot write '{}': {}", path, std::strerror(errno));
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok)
    fail("cannot write '{}': {}", path, std::strerror(errno));
}

} // namespace kfuse::tool
