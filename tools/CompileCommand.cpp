// `kfuse compile G.kf [--arch sm_90a] [--tf32] [--no-fusion] [--dump-kernels DIR] [--emit cuda,ptx,cubin]`:
// runs the -O2 pipeline (or none), generates the CUDA C of every kernel, compiles the whole
// program with NVRTC for one architecture and, with --dump-kernels, writes what is needed to
// rebuild and launch each kernel by hand. Needs no GPU.
#include "codegen/CudaCodegen.h"
#include "codegen/KernelSpec.h"
#include "ir/Error.h"
#include "ir/Parser.h"
#include "passes/PassManager.h"
#include "runtime/Nvrtc.h"
#include "tools/CliArgs.h"
#include "tools/Command.h"

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

int compileMain(const std::vector<std::string> &args) {
  CliArgs cli("compile", "FILE.kf",
              "Generates CUDA C for every kernel of each graph and compiles it with NVRTC.");
  cli.option("--arch", "ARCH",
             "target architecture (default sm_90a: the H100/H200's own wgmma; sm_90 portable)");
  cli.flag("--no-fusion", "every op its own kernel (no passes)");
  cli.flag("--tf32", "f32 matmuls on tensor cores, inputs rounded to TF32 (default: exact f32)");
  cli.option("--dump-kernels", "DIR", "write each kernel's .cu, the NVRTC options and launches");
  cli.option("--emit", "LIST", "with --dump-kernels: any of cuda,ptx,cubin (default cuda)");
  if (auto rc = cli.parse(args))
    return *rc;
  std::string arch = cli.value("--arch", "sm_90a");
  codegen::Target target;
  try {
    target = codegen::parseArch(arch);
  } catch (const Error &e) {
    return cli.badArgs(e.what());
  }
  target.allowTf32 = cli.has("--tf32");
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
  auto graphs = parseFile(cli.positionals()[0]);
  for (auto &g : graphs) {
    if (!cli.has("--no-fusion")) {
      PassManager pm;
      pm.addPipeline(defaultPipeline());
      pm.run(*g);
    }
    std::vector<codegen::KernelSpec> specs = codegen::buildKernelSpecs(*g, target);
    std::string source = codegen::emitProgram(specs);
    runtime::CompiledProgram prog = runtime::nvrtcCompile(source, arch, emit.count("ptx") > 0);
    fmt::print("graph {}: {} kernel{}, {} bytes of CUDA C, {} bytes of {} cubin (NVRTC {})\n",
               g->name(), specs.size(), specs.size() == 1 ? "" : "s", source.size(),
               prog.cubin.size(), arch, runtime::nvrtcVersionString());
    std::string options;
    for (const std::string &o : runtime::nvrtcOptions(arch))
      options += o + "\n";
    std::string launches = "# kernel grid block numel [gridY gridZ sharedBytes kernel]\n";
    for (const auto &s : specs) {
      codegen::LaunchConfig lc = s.launchConfig(codegen::kDefaultBlock, 132 * 8);
      if (!s.gemm) {
        launches += fmt::format("{} {} {} {}\n", s.mangled, lc.grid, lc.block, s.numel());
        fmt::print("  {:<24} {:>12} elements  grid {} x block {}\n", s.mangled, s.numel(), lc.grid,
                   lc.block);
        continue;
      }
      const codegen::GemmSpec &gs = *s.gemm;
      launches +=
          fmt::format("{} {} {} {} {} {} {} {}\n", s.mangled, lc.grid, lc.block, s.numel(),
                      lc.gridY, lc.gridZ, lc.sharedBytes, codegen::gemmKernelName(gs.kernel));
      fmt::print("  {:<24} {:>12} elements  grid {}x{}x{} x block {}, {} B shared: {}\n", s.mangled,
                 s.numel(), lc.grid, lc.gridY, lc.gridZ, lc.block, lc.sharedBytes, gs.describe());
      fmt::print("  {:<24} chosen because {}\n", "", gs.why);
    }
    if (dumpDir.empty())
      continue;
    std::filesystem::path dir = graphs.size() == 1 ? std::filesystem::path(dumpDir)
                                                   : std::filesystem::path(dumpDir) / g->name();
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
      fail("cannot create '{}': {}", dir.string(), ec.message());
    if (emit.count("cuda")) {
      writeFile(dir / "program.cu", source);
      for (const auto &s : specs) // each kernel standalone, with its helpers, to rebuild alone
        writeFile(dir / (s.mangled + ".cu"), codegen::emitKernelSource(s));
    }
    if (emit.count("ptx"))
      writeFile(dir / "program.ptx", prog.ptx);
    if (emit.count("cubin"))
      writeFile(dir / "program.cubin", prog.cubin);
    writeFile(dir / "nvrtc-options.txt", options);
    writeFile(dir / "launch.txt", launches);
    fmt::print("  wrote {}\n", dir.string());
  }
  return kExitOk;
}

CommandRegistration reg{"compile", "generate CUDA C and compile it with NVRTC (no GPU needed)",
                        compileMain};

} // namespace
} // namespace kfuse::tool
