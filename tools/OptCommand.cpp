// `kfuse opt FILE.kf [-o OUT]`: parses every graph of a module, verifies it, runs the
// requested pipeline and prints the module. The steps are kept apart (options, load,
// transform, write) so that pass options slot in without touching the rest.
#include "ir/Error.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "tools/CliArgs.h"
#include "tools/Command.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <iostream>
#include <iterator>

namespace kfuse::tool {
namespace {

CliArgs optCli() {
  CliArgs cli("opt", "FILE.kf",
              "Parses every graph of FILE.kf ('-' reads stdin), verifies it and prints the "
              "module.");
  cli.option("-o", "FILE", "write the module to FILE instead of stdout", {"--output"});
  return cli;
}

/// A .kf file or stdin ("-"): parse errors are printed as-is by the caller.
std::vector<std::unique_ptr<Graph>> loadModule(const std::string &path) {
  if (path != "-")
    return parseFile(path);
  std::string text(std::istreambuf_iterator<char>(std::cin), {});
  return parseModule(text, "<stdin>");
}

void writeText(const std::string &path, const std::string &text) {
  if (path.empty() || path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
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

int optMain(const std::vector<std::string> &args) {
  CliArgs cli = optCli();
  if (auto rc = cli.parse(args))
    return *rc;
  // A ParseError propagates to tools/kfuse.cpp, which prints it as-is (exit 1).
  std::vector<std::unique_ptr<Graph>> graphs = loadModule(cli.positionals()[0]);
  // Passes go here: each graph is transformed in place before printing.
  std::vector<const Graph *> view;
  for (const auto &g : graphs)
    view.push_back(g.get());
  writeText(cli.value("-o"), printModule(view));
  return kExitOk;
}

CommandRegistration reg{"opt", "parse, verify, optimize and print a .kf module", optMain};

} // namespace
} // namespace kfuse::tool
