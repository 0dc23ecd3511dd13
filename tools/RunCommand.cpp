// `kfuse run G.kf`: executes a graph on inputs from .npy files (or random ones) and writes
// its outputs as .npy files. On the GPU through runtime::Program (plan, compile, load, run,
// check, time); with --cpu on the reference interpreter.
#include <algorithm>
#include "ir/Error.h"
#include "ir/InputFile.h"
#include "ir/Interpreter.h"
#include "ir/Npy.h"
#include "ir/Parser.h"
#include "ir/Random.h"
#include "target/Target.h"
#include "analysis/Traffic.h"
#include "runtime/Program.h"
#include "tools/CompileFlags.h"
#include "tools/CliArgs.h"
#include "tools/Command.h"
#include "tools/ModuleIO.h"

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
  bool float64 = false; ///< --cpu without rounding the plan's stored values
  bool check = false, bench = false, noFusion = false, noGraph = false, autotune = false;
  compiler::CompileOptions compile; ///< --tf32, --dump, --jobs: the driver's options
  std::string device = "h200"; ///< the device the benchmark's predictions are for
  int reps = 30;
};

/// Parses the command line into `opts`; returns an exit code when the command should stop.
std::optional<int> parseRunOptions(const std::vector<std::string> &args, RunOptions &opts) {
  CliArgs cli("run", "FILE.kf",
              "execute a graph on .npy or random inputs and write its outputs as .npy files");
  cli.flag("--cpu", "run on the CPU with the reference interpreter, rounding the values the "
                   "compiled plan stores to their dtypes as the GPU does");
  cli.flag("--float64", "with --cpu: keep every intermediate in float64, rounding only at casts "
                        "and outputs");
  cli.option("--graph", "NAME", "the graph to run (default: the file's first)");
  cli.option("--inputs", "DIR", "read input X from DIR/X.npy (f32, f64 or f16 data)");
  cli.option("--random", "SEED", "use random inputs in [-1, 1) from SEED (the default, seed 0)");
  cli.option("--outputs", "DIR", "write output Y to DIR/Y.npy as f32 (unnamed: DIR/out<i>.npy)");
  cli.flag("--check", "compare every output with the reference interpreter (dtype tolerances)");
  cli.flag("--bench",
           "time each kernel and the program against a device copy, predicted vs measured");
  cli.flag("--no-fusion", "run the unfused plan: every op its own kernel (with --cpu: round "
                          "every op's value, as that plan stores it)");
  cli.flag("--no-graph", "launch the kernels one by one on a stream instead of one CUDA graph");
  cli.flag("--autotune", "time every configuration of each GEMM kernel first and keep the "
                         "fastest (cached in KFUSE_CACHE_DIR)");
  declareCompileFlags(cli, kTf32Flag | kDumpFlag | kJobsFlag);
  cli.option("--device", "NAME",
             "device the --bench predictions are for: h100, h200 (default) or NAME:TBps:TFLOPs");
  cli.option("--reps", "N", "timed repetitions per measurement for --bench (median; default 30)");
  if (auto rc = cli.parse(args))
    return rc;
  opts.check = cli.has("--check");
  opts.bench = cli.has("--bench");
  opts.noFusion = cli.has("--no-fusion");
  opts.noGraph = cli.has("--no-graph");
  opts.autotune = cli.has("--autotune");
  if (auto rc = readCompileFlags(cli, kTf32Flag | kDumpFlag | kJobsFlag, opts.compile))
    return rc;
  if (cli.has("--device")) {
    opts.device = cli.value("--device");
    try { // checked now, not after the run it would only time: a bad value is exit 2
      parseTarget(opts.device);
    } catch (const Error &e) {
      return cli.badArgs(e.what());
    }
  }
  if (cli.has("--reps"))
    if (auto rc = cli.positiveInt("--reps", opts.reps))
      return rc;
  opts.file = cli.positionals()[0];
  opts.cpu = cli.has("--cpu");
  opts.float64 = cli.has("--float64");
  if (opts.float64 && !opts.cpu)
    return cli.badArgs("--float64 is for --cpu runs; the GPU computes in f32");
  if (opts.float64 && opts.noFusion)
    return cli.badArgs("--float64 rounds no plan's values; --no-fusion picks the plan to round");
  opts.graphName = cli.value("--graph");
  opts.inputsDir = cli.value("--inputs");
  opts.outputsDir = cli.value("--outputs");
  if (cli.has("--inputs") && cli.has("--random"))
    return cli.badArgs("--inputs and --random exclude each other");
  if (cli.has("--inputs") && opts.inputsDir.empty())
    return cli.badArgs("--inputs needs a folder");
  if (cli.has("--cpu"))
    for (const char *gpuOnly :
         {"--check", "--bench", "--no-graph", "--device", "--reps", "--autotune",
          "--tf32", "--dump", "--jobs"})
      if (cli.has(gpuOnly))
        return cli.badArgs(
            fmt::format("{} is for GPU runs; --cpu runs the reference interpreter", gpuOnly));
  if (cli.has("--random")) {
    std::string s = cli.value("--random");
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), opts.seed);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size())
      return cli.badArgs(fmt::format("--random needs a non-negative integer seed, got '{}'", s));
  }
  return std::nullopt;
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
  // The error_code overloads: a symlink loop or an over-long name is the user's error to
  // read, with the path, not a filesystem_error.
  std::error_code ec;
  fs::file_status dir = fs::status(opts.inputsDir, ec);
  if (ec && dir.type() != fs::file_type::not_found)
    fail("--inputs '{}': {}", excerpt(opts.inputsDir), ec.message());
  if (!fs::is_directory(dir))
    fail("--inputs '{}' is not a folder", excerpt(opts.inputsDir));
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    std::string path = (fs::path(opts.inputsDir) / (inputName(g, i) + ".npy")).string();
    if (fs::status(path, ec).type() == fs::file_type::not_found) // else readNpy says why
      fail("input '{}' ({}) of graph '{}' has no file '{}'", excerpt(inputName(g, i)),
           g.inputs()[i]->type().str(), excerpt(g.name()), excerpt(path, 400));
    std::string warning;
    inputs.push_back(readNpy(path, g.inputs()[i]->type(), &warning));
    if (!warning.empty())
      fmt::print(stderr, "kfuse: warning: input '{}': {}\n", excerpt(inputName(g, i)), warning);
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

/// What --autotune measured: per tuned GEMM problem, the candidates fastest first (the
/// heuristic's choice marked), or the choice the cache held.
void printAutotune(const runtime::Program &p) {
  for (const runtime::AutotuneResult &r : p.autotuned()) {
    if (r.fromCache) {
      fmt::print("autotune {}: {} (cached choice for {})\n", r.kernel, r.tried[0].config, r.key);
      continue;
    }
    fmt::print("autotune {}: {} configurations for {}\n", r.kernel, r.tried.size(), r.key);
    std::vector<size_t> order(r.tried.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    auto key = [&](size_t i) { return r.tried[i].us < 0 ? 1e300 : r.tried[i].us; };
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
    for (size_t i : order)
      fmt::print("  {:>10} {}{}{}\n",
                 r.tried[i].us < 0 ? std::string("failed") : fmt::format("{:.1f} us", r.tried[i].us),
                 r.tried[i].config, i == 0 ? "  [heuristic]" : "", i == r.chosen ? "  [chosen]" : "");
  }
}

/// Runs `g` on the reference interpreter. Unless --float64, the 16-bit values the compiled
/// plan (fused, or --no-fusion's) stores are rounded to their dtypes where they are computed,
/// as the kernels store them (an f32 value is the same stored or not: the kernels compute in
/// f32). The stored values are each kernel's outputs, the plan compiled to CUDA C without
/// NVRTC; in graphs of more than 20,000 ops (codegen took longer than the interpreter) or
/// without kernels (a GEMM too large to index), the values that leave their kernel region.
std::vector<Tensor> runOnCpu(const Graph &g, const std::vector<Tensor> &inputs,
                             const RunOptions &opts) {
  bool sixteen = false;
  for (const Node *n : g.nodes())
    sixteen |= n->dtype() != DType::F32;
  if (opts.float64 || !sixteen)
    return interpret(g, inputs);
  compiler::CompileOptions co = opts.compile;
  co.planning = opts.noFusion ? compiler::Planning::Unfused : compiler::Planning::Fused;
  co.until = g.numNodes() > 20000 ? compiler::Stage::Plan : compiler::Stage::Source;
  compiler::CompiledModule m;
  try {
    m = compiler::compile(g, co);
  } catch (const Error &) {
    co.until = compiler::Stage::Plan;
    m = compiler::compile(g, co);
  }
  std::vector<unsigned> stored;
  for (const compiler::CompiledKernel &k : m.kernels)
    for (const codegen::SpecOutput &out : k.spec.outputs)
      stored.push_back(out.tensor.nodeId);
  if (co.until == compiler::Stage::Plan)
    for (const Node *n : m.plan->nodes())
      for (const Node *u : n->users())
        if (!n->isInput() && (n->kernel() < 0 || u->kernel() != n->kernel()))
          stored.push_back(n->id());
  return interpret(*m.plan, inputs, stored);
}

/// Runs `g` on the GPU as the options say; prints what was compiled, the check and the
/// benchmark. Returns the outputs.
std::vector<Tensor> runOnGpu(const Graph &g, const std::vector<Tensor> &inputs,
                             const RunOptions &opts) {
  runtime::Program p(g, {.fuse = !opts.noFusion, .autotune = opts.autotune, .compile = opts.compile});
  printAutotune(p);
  const compiler::CacheStats &c = p.cacheUse();
  fmt::print("{}: {} kernel{} ({}), compiled and loaded in {:.2f} ms ({})\n", g.name(),
             p.numKernels(), p.numKernels() == 1 ? "" : "s",
             opts.noFusion ? "unfused" : "fused -O2", p.compileLoadMs(),
             c.compiles   ? "NVRTC"
             : c.diskHits ? "disk cache"
                          : "memory cache");
  std::vector<Tensor> outputs = p.run(inputs, !opts.noGraph);
  if (opts.check) {
    std::string m = p.check(inputs, outputs);
    if (!m.empty())
      fail("check failed: {}", m);
    fmt::print("check: all {} output{} match the reference interpreter\n", outputs.size(),
               outputs.size() == 1 ? "" : "s");
  }
  if (opts.bench) {
    Target dev = parseTarget(opts.device);
    runtime::TimingOptions t{.warmup = 3, .reps = opts.reps};
    runtime::ProgramTiming mine = p.bench(inputs, dev, t);
    fmt::print("\n{}", runtime::formatTiming(mine, dev));
    double ms = mine.graphMs >= 0 && !opts.noGraph ? mine.graphMs : mine.streamMs;
    fmt::print("measured / predicted: {:.2f}\n",
               mine.predictedMs > 0 ? ms / mine.predictedMs : 0.0);
    if (!opts.noFusion) {
      compiler::CompileOptions co = opts.compile;
      co.dumpDir.clear(); // the dump is the plan that ran
      runtime::Program unfused(g, {.fuse = false, .autotune = opts.autotune, .compile = co});
      runtime::ProgramTiming other = unfused.bench(inputs, dev, t);
      double otherMs = other.graphMs >= 0 && !opts.noGraph ? other.graphMs : other.streamMs;
      fmt::print(
          "fused {} vs unfused {} ({} kernels): {:.2f}x faster measured, {:.2f}x predicted\n",
          formatSeconds(ms * 1e-3), formatSeconds(otherMs * 1e-3), unfused.numKernels(),
          otherMs / ms, other.predictedMs / mine.predictedMs);
    }
  }
  return outputs;
}

int runMain(const std::vector<std::string> &args) {
  RunOptions opts;
  if (auto rc = parseRunOptions(args, opts))
    return *rc;
  std::vector<std::unique_ptr<Graph>> module = loadModule(opts.file);
  const Graph &g = selectGraph(module, opts.file, opts.graphName);
  if (!opts.cpu) { // say so before spending time on inputs
    try {
      runtime::Driver::require();
    } catch (const Error &e) {
      fail("{} (--cpu runs the graph on the reference interpreter instead)", e.what());
    }
  }
  else // the interpreter's size limit, before float64 inputs are built for it
    checkInterpretable(g);
  std::vector<Tensor> inputs = loadInputs(g, opts);
  std::vector<Tensor> outputs =
      opts.cpu ? runOnCpu(g, inputs, opts) : runOnGpu(g, inputs, opts);
  writeOutputs(g, outputs, opts);
  printSummary(g, outputs);
  return kExitOk;
}

CommandRegistration reg{"run", "execute a graph on the GPU (or --cpu), check it, time it", runMain};

} // namespace
} // namespace kfuse::tool
