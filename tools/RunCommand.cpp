// `kfuse run G.kf`: executes a graph on inputs from .npy files (or random ones) and writes
// its outputs as .npy files. With --cpu it runs the reference interpreter; GPU execution
// plugs in at runGraph() and reuses the option parsing, input loading and output writing.
#include "ir/Error.h"
#include "ir/Interpreter.h"
#include "ir/Npy.h"
#include "ir/Parser.h"
#include "ir/Random.h"
#include "tools/CliArgs.h"
#include "tools/Command.h"

#include <charconv>
#include <filesystem>
#include <fmt/core.h>

namespace kfuse::tool {
namespace {

namespace fs = std::filesystem;

struct RunOptions {
  std::string file;
  std::string graphName;  ///< empty: the file's first graph
  std::string inputsDir;  ///< empty: random inputs
  std::string outputsDir; ///< empty: print the summary only
  uint64_t seed = 0;
  bool cpu = false;
};

/// Parses the command line into `opts`; returns an exit code when the command should stop.
std::optional<int> parseRunOptions(const std::vector<std::string> &args, RunOptions &opts) {
  CliArgs cli("run", "FILE.kf",
              "execute a graph on .npy or random inputs and write its outputs as .npy files");
  cli.flag("--cpu", "run on the CPU with the float64 reference interpreter");
  cli.option("--graph", "NAME", "the graph to run (default: the file's first)");
  cli.option("--inputs", "DIR", "read input X from DIR/X.npy (f32, f64 or f16 data)");
  cli.option("--random", "SEED", "use random inputs in [-1, 1) from SEED (the default, seed 0)");
  cli.option("--outputs", "DIR", "write output Y to DIR/Y.npy as f32 (unnamed: DIR/out<i>.npy)");
  if (auto rc = cli.parse(args))
    return rc;
  opts.file = cli.positionals()[0];
  opts.cpu = cli.has("--cpu");
  opts.graphName = cli.value("--graph");
  opts.inputsDir = cli.value("--inputs");
  opts.outputsDir = cli.value("--outputs");
  if (cli.has("--inputs") && cli.has("--random"))
    return cli.badArgs("--inputs and --random exclude each other");
  if (cli.has("--inputs") && opts.inputsDir.empty())
    return cli.badArgs("--inputs needs a folder");
  if (cli.has("--random")) {
    std::string s = cli.value("--random");
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), opts.seed);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size())
      return cli.badArgs(fmt::format("--random needs a non-negative integer seed, got '{}'", s));
  }
  return std::nullopt;
}

const Graph &selectGraph(const std::vector<std::unique_ptr<Graph>> &module,
                         const RunOptions &opts) {
  if (module.empty())
    fail("'{}' holds no graph", opts.file);
  if (opts.graphName.empty())
    return *module.front();
  std::string names;
  for (const auto &g : module) {
    if (g->name() == opts.graphName)
      return *g;
    names += (names.empty() ? "" : ", ") + g->name();
  }
  fail("'{}' has no graph named '{}' (it has {})", opts.file, opts.graphName, names);
}

std::string inputName(const Graph &g, size_t i) {
  const std::string &n = g.inputs()[i]->name();
  return n.empty() ? fmt::format("in{}", i) : n;
}

std::string outputName(const Graph &g, size_t i) {
  const std::string &n = g.outputs()[i]->name();
  return n.empty() ? fmt::format("out{}", i) : n;
}

/// Inputs in declaration order: DIR/<name>.npy converted to each input's dtype, or random.
std::vector<Tensor> loadInputs(const Graph &g, const RunOptions &opts) {
  if (opts.inputsDir.empty())
    return randomInputs(g, opts.seed);
  if (!fs::is_directory(opts.inputsDir))
    fail("--inputs '{}' is not a folder", opts.inputsDir);
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    std::string path = (fs::path(opts.inputsDir) / (inputName(g, i) + ".npy")).string();
    if (!fs::exists(path))
      fail("input '{}' ({}) of graph '{}' has no file '{}'", inputName(g, i),
           g.inputs()[i]->type().str(), g.name(), path);
    inputs.push_back(readNpy(path, g.inputs()[i]->type()));
  }
  return inputs;
}

/// Writes DIR/<output name>.npy for each output, when --outputs was given.
void writeOutputs(const Graph &g, const std::vector<Tensor> &outputs, const RunOptions &opts) {
  if (opts.outputsDir.empty())
    return;
  std::error_code ec;
  fs::create_directories(opts.outputsDir, ec);
  if (ec)
    fail("cannot create --outputs folder '{}': {}", opts.outputsDir, ec.message());
  for (size_t i = 0; i < outputs.size(); ++i)
    writeNpy((fs::path(opts.outputsDir) / (outputName(g, i) + ".npy")).string(), outputs[i]);
}

/// One line per output: its name, type and min / max / mean.
void printSummary(const Graph &g, const std::vector<Tensor> &outputs) {
  for (size_t i = 0; i < outputs.size(); ++i)
    fmt::print("{}: {}\n", outputName(g, i), summarize(outputs[i]));
}

std::vector<Tensor> runGraph(const Graph &g, const std::vector<Tensor> &inputs,
                             const RunOptions &opts) {
  if (!opts.cpu)
    fail("GPU execution is not built yet; pass --cpu to run the reference interpreter");
  return interpret(g, inputs);
}

int runMain(const std::vector<std::string> &args) {
  RunOptions opts;
  if (auto rc = parseRunOptions(args, opts))
    return *rc;
  std::vector<std::unique_ptr<Graph>> module = parseFile(opts.file);
  const Graph &g = selectGraph(module, opts);
  if (!opts.cpu) // say so before spending time on inputs
    fail("GPU execution is not built yet; pass --cpu to run the reference interpreter");
  std::vector<Tensor> inputs = loadInputs(g, opts);
  std::vector<Tensor> outputs = runGraph(g, inputs, opts);
  writeOutputs(g, outputs, opts);
  printSummary(g, outputs);
  return kExitOk;
}

CommandRegistration reg{"run", "execute a graph (--cpu: reference interpreter) on .npy inputs",
                        runMain};

} // namespace
} // namespace kfuse::tool
