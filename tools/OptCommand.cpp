// `kfuse opt FILE.kf [-o OUT]`: parses every graph of a module, verifies it, runs the
// requested pipeline and prints the module. The steps are kept apart (options, load,
// transform, write) so that pass options slot in without touching the rest.
#include "compiler/Compile.h"
#include "ir/Error.h"
#include "ir/Printer.h"
#include "passes/PassManager.h"
#include "tools/CliArgs.h"
#include "tools/Command.h"
#include "tools/CompileFlags.h"
#include "tools/ModuleIO.h"

#include <fmt/format.h>

namespace kfuse::tool {
namespace {

CliArgs optCli() {
  CliArgs cli("opt", "FILE.kf",
              "Parses every graph of FILE.kf ('-' reads stdin), verifies it and prints the "
              "module.");
  cli.option("-o", "FILE", "write the module to FILE instead of stdout", {"--output"});
  cli.option("--passes", "LIST",
             "run these passes in order, comma-separated: simplify, cse, dce, fuse");
  cli.flag("-O2", "run the default pipeline (simplify,cse,dce,fuse)", {"-O1"});
  cli.flag("-O0", "run no passes (the default)");
  cli.flag("--print-after-all", "print the IR to stderr after every pass");
  cli.option("--print-after", "PASS", "print the IR to stderr after PASS (repeatable)")
      .repeatable();
  cli.flag("--verify-each", "verify the graph after every pass");
  cli.flag("--time-passes", "print each pass's time to stderr");
  cli.flag("--explain-fusion",
           "append every producer->consumer edge, fused or left apart, and every "
           "recompute, with its reason, as '#' comments");
  // Fusion asks the target whether its GEMM kernel computes sibling matmuls' two products.
  declareCompileFlags(cli, kArchFlag | kTf32Flag);
  return cli;
}

int optMain(const std::vector<std::string> &args) {
  CliArgs cli = optCli();
  if (auto rc = cli.parse(args))
    return *rc;
  if (cli.has("--passes") && (cli.has("-O2") || cli.has("-O0")))
    return cli.badArgs("--passes and -O0/-O2 exclude each other");
  std::vector<std::string> pipeline;
  PassManagerOptions popts;
  popts.printAfterAll = cli.has("--print-after-all");
  popts.printAfter = cli.values("--print-after");
  popts.verifyEach = cli.has("--verify-each");
  popts.timePasses = cli.has("--time-passes");
  popts.explainFusion = cli.has("--explain-fusion");
  popts.printer = [](const Graph &g) { return printGraph(g); };
  compiler::CompileOptions copts;
  if (auto rc = readCompileFlags(cli, kArchFlag | kTf32Flag, copts))
    return *rc;
  popts.siblingGemm = codegen::siblingGemmPolicy(copts.target, copts.allowTf32);
  try { // an unknown pass is a bad option value (exit 2), found before the file is read
    if (cli.has("--passes"))
      pipeline = parsePipeline(cli.value("--passes"));
    else if (cli.has("-O2"))
      pipeline = defaultPipeline();
    PassManager check(popts); // rejects an unknown --print-after pass
  } catch (const Error &e) {
    return cli.badArgs(e.what());
  }
  // A ParseError propagates to tools/kfuse.cpp, which prints it as-is (exit 1).
  std::vector<std::unique_ptr<Graph>> graphs = loadModule(cli.positionals()[0]);
  std::string explain;
  for (const auto &g : graphs) {
    PassManager pm(popts);
    pm.addPipeline(pipeline);
    std::string log;
    pm.run(*g, &log);
    std::fwrite(log.data(), 1, log.size(), stderr);
    if (cli.has("--explain-fusion")) {
      explain += fmt::format("\n# fusion decisions for graph {}:\n", g->name());
      if (pm.fusionLog().unfused() == 0)
        explain += "#   every producer->consumer edge fused\n";
      for (const FusionEdge &e : pm.fusionLog().edges)
        explain += "#   " + e.str() + "\n";
    }
  }
  std::vector<const Graph *> view;
  for (const auto &g : graphs)
    view.push_back(g.get());
  writeText(cli.value("-o"), printModule(view) + explain);
  return kExitOk;
}

CommandRegistration reg{"opt", "parse, verify, optimize and print a .kf module", optMain};

} // namespace
} // namespace kfuse::tool
