// `kfuse compile G.kf [--arch sm_90a] [--tf32] [--no-fusion] [--jobs N] [--dump DIR]
// [--dump-kernels DIR] [--emit cuda,ptx,cubin]`: compiler::compile() on each graph (the -O2
// pipeline or none, the CUDA C of every kernel, each kernel its own NVRTC program on a
// thread pool, through the kernel cache), then the kernels with their launches, registers
// and compile times; --dump-kernels writes what is needed to rebuild and launch each kernel
// by hand. Needs no GPU.
#include "compiler/Compile.h"
#include "compiler/Dump.h"
#include "compiler/Nvrtc.h"
#include "ir/Error.h"
#include "ir/Parser.h"
#include "tools/CliArgs.h"
#include "tools/CompileFlags.h"
#include "tools/Command.h"
#include "tools/ModuleIO.h"

#include <filesystem>
#include <fmt/core.h>
#include <fstream>
#include <set>

namespace kfuse::tool {
namespace {

void writeFile(const std::filesystem::path &p, const std::string &bytes) {
  std::ofstream f(p, std::ios::binary);
  f << bytes;
  if (!f)
    fail("cannot write '{}'", p.string());
}

/// What one line of launch.txt and of the summary say about kernel `k`.
void printKernel(const compiler::CompiledKernel &k, std::string &launches, bool print) {
  const codegen::KernelSpec &s = k.spec;
  const codegen::LaunchConfig &lc = k.launch;
  std::string regs = k.ptxas.registers < 0
                         ? std::string()
                         : fmt::format(", {} registers, {} B spilled", k.ptxas.registers,
                                       k.ptxas.spillStores + k.ptxas.spillLoads);
  std::string took =
      k.sameCodeAs >= 0
          ? fmt::format("the same code as {}: launched as it, compiled once", k.entry)
          : fmt::format("compiled in {:.0f} ms{}", k.compileMs, k.cached ? " (cached)" : "");
  if (!s.gemm()) {
    // A staged reduction (dynamic shared memory) also gives gridY, gridZ and its bytes.
    std::string smem = lc.sharedBytes ? fmt::format(" {} {} {} reduce", lc.gridY, lc.gridZ,
                                                    lc.sharedBytes)
                                      : std::string();
    launches += fmt::format("{} {} {} {}{}\n", k.entry, lc.grid, lc.block, s.numel(), smem);
    if (print)
      fmt::print("  {:<24} {:>12} elements  grid {} x block {}{}; {}{}\n", s.mangled, s.numel(),
                 lc.grid, lc.block,
                 lc.sharedBytes ? fmt::format(", {} B shared", lc.sharedBytes) : std::string(),
                 took, regs);
    return;
  }
  const codegen::GemmSpec &gs = *s.gemm();
  launches += fmt::format("{} {} {} {} {} {} {} {}\n", k.entry, lc.grid, lc.block, s.numel(),
                          lc.gridY, lc.gridZ, lc.sharedBytes, codegen::gemmKernelName(gs.kernel));
  if (!print)
    return;
  fmt::print("  {:<24} {:>12} elements  grid {}x{}x{} x block {}, {} B shared: {}\n", s.mangled,
             s.numel(), lc.grid, lc.gridY, lc.gridZ, lc.block, lc.sharedBytes, gs.describe());
  fmt::print("  {:<24} chosen because {}\n", "", gs.why);
  fmt::print("  {:<24} {}{}\n", "", took, regs);
}

/// The first line of each graph: kernels, bytes of CUDA C and cubin, compile times.
void printSummary(const Graph &g, const compiler::CompiledModule &m) {
  size_t bytes = 0, cubin = 0, distinct = 0;
  for (const compiler::CompiledKernel &k : m.kernels) {
    bytes += k.source.size();
    if (k.sameCodeAs < 0) { // a shared cubin is counted once
      cubin += k.cubin.size();
      ++distinct;
    }
  }
  std::string compiled = distinct == m.kernels.size()
                             ? std::string()
                             : fmt::format(" ({} compiled: the others have the same code as one)",
                                           distinct);
  fmt::print("graph {}: {} kernel{}{}, {} bytes of CUDA C, {} bytes of {} cubin (NVRTC {}); "
             "{:.0f} ms ({:.0f} ms NVRTC on {} thread{})\n",
             g.name(), m.kernels.size(), m.kernels.size() == 1 ? "" : "s", compiled, bytes, cubin, m.arch,
             compiler::nvrtcVersionString(), m.totalMs, m.nvrtcWallMs, m.jobs,
             m.jobs == 1 ? "" : "s");
}

/// --json: kernels.json's object (compiler/Dump.h, the dump's), on one line, with the NVRTC
/// version.
void printJson(const compiler::CompiledModule &m) {
  std::string j = compiler::kernelsJson(m);
  std::erase(j, '\n'); // strings in it are escaped: only layout newlines
  fmt::print("{}, \"nvrtc\": \"{}\"}}\n", j.substr(0, j.rfind('}')),
             compiler::nvrtcVersionString());
}

/// --dump-kernels: what is needed to rebuild and launch each kernel by hand.
void dumpKernels(const compiler::CompiledModule &m, const std::filesystem::path &dir,
                 const std::set<std::string> &emit, const std::string &launches, bool say) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    fail("cannot create '{}': {}", dir.string(), ec.message());
  std::string program, ptx, options;
  for (const compiler::CompiledKernel &k : m.kernels) {
    if (emit.count("cuda")) // each kernel standalone, with the helpers it uses
      writeFile(dir / (k.spec.mangled + ".cu"), k.source);
    if (k.sameCodeAs >= 0)
      continue; // launch.txt launches the entry of the kernel it shares its code with
    if (emit.count("ptx"))
      writeFile(dir / (k.spec.mangled + ".ptx"), k.ptx);
    if (emit.count("cubin"))
      writeFile(dir / (k.spec.mangled + ".cubin"), k.cubin);
  }
  for (const std::string &o : m.nvrtcOptions)
    options += o + "\n";
  writeFile(dir / "nvrtc-options.txt", options);
  writeFile(dir / "launch.txt", launches);
  if (say)
    fmt::print("  wrote {}\n", dir.string());
}

int compileMain(const std::vector<std::string> &args) {
  CliArgs cli("compile", "FILE.kf",
              "Generates CUDA C for every kernel of each graph of FILE.kf ('-' reads stdin) and "
              "compiles each kernel with "
              "NVRTC (on several threads).");
  unsigned flags = kArchFlag | kTf32Flag | kNoFusionFlag | kDumpFlag | kJobsFlag | kDeviceFlag;
  declareCompileFlags(cli, flags);
  cli.option("--dump-kernels", "DIR", "write each kernel's .cu, the NVRTC options and launches");
  cli.option("--emit", "LIST", "with --dump-kernels: any of cuda,ptx,cubin (default cuda)");
  cli.flag("--json", "print one JSON object per graph (kernels, launches, registers, expected "
                     "times, compile times) instead of the text");
  if (auto rc = cli.parse(args))
    return *rc;
  compiler::CompileOptions o;
  if (auto rc = readCompileFlags(cli, flags, o))
    return *rc;
  std::set<std::string> emit;
  for (std::string rest = cli.value("--emit", "cuda"); !rest.empty();) {
    size_t comma = rest.find(',');
    std::string item = rest.substr(0, comma);
    if (item != "cuda" && item != "ptx" && item != "cubin")
      return cli.badArgs(fmt::format("--emit takes cuda, ptx or cubin, got '{}'", item));
    emit.insert(item);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
  }
  std::string dumpDir = cli.value("--dump-kernels");
  o.wantPtx = !dumpDir.empty() && emit.count("ptx");
  auto graphs = loadModule(cli.positionals()[0]);
  bool json = cli.has("--json");
  for (auto &g : graphs) {
    compiler::CompiledModule m = compiler::compile(*g, o);
    if (json)
      printJson(m);
    else
      printSummary(*g, m);
    std::string launches = "# kernel grid block numel [gridY gridZ sharedBytes kernel]\n";
    for (const compiler::CompiledKernel &k : m.kernels)
      printKernel(k, launches, !json);
    if (!dumpDir.empty())
      dumpKernels(m, graphs.size() == 1 ? std::filesystem::path(dumpDir)
                                        : std::filesystem::path(dumpDir) / g->name(),
                  emit, launches, !json);
  }
  return kExitOk;
}

CommandRegistration reg{"compile", "generate CUDA C and compile it with NVRTC (no GPU needed)",
                        compileMain};

} // namespace
} // namespace kfuse::tool
