#include "compiler/Dump.h"

#include "codegen/KernelSpec.h"
#include "ir/Error.h"
#include "ir/Printer.h"
#include "ir/JsonText.h"

#include <filesystem>
#include <fmt/format.h>
#include <fstream>

namespace kfuse::compiler {

namespace fs = std::filesystem;

namespace {

void writeFile(const fs::path &p, const std::string &bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << bytes;
  if (!f)
    fail("cannot write the dump file '{}'", p.string());
}

std::string launchJson(const codegen::LaunchConfig &l) {
  return fmt::format("{{\"grid\": [{}, {}, {}], \"block\": [{}, {}, {}], \"shared_bytes\": {}, "
                     "\"cluster\": {}, \"cooperative\": {}}}",
                     l.grid, l.gridY, l.gridZ, l.block, l.blockY, l.blockZ, l.sharedBytes,
                     l.cluster, l.cooperative() ? "true" : "false");
}

std::string kernelJson(const CompiledKernel &k) {
  const PtxasInfo &p = k.ptxas;
  return fmt::format(
      "{{\"name\": \"{}\", \"function\": \"{}\", \"kind\": \"{}\", \"elements\": {}, "
      "\"launch\": {}, \"registers\": {}, \"spill_stores\": {}, \"spill_loads\": {}, "
      "\"stack_bytes\": {}, \"static_shared_bytes\": {}, \"expected_seconds\": {:.6g}, "
      "\"why\": \"{}\", \"compile_ms\": {:.3f}, \"cached\": {}, \"source_bytes\": {}, "
      "\"entry\": \"{}\", \"same_code_as\": {}}}",
      jsonEscape(k.spec.name), k.spec.mangled,
      k.spec.gemm() ? jsonEscape(k.spec.gemm()->describe()) : std::string("pointwise"),
      k.spec.numel(), launchJson(k.launch), p.registers, p.spillStores, p.spillLoads,
      p.stackBytes, p.sharedBytes, k.estimate.seconds, jsonEscape(k.estimate.why), k.compileMs,
      k.cached ? "true" : "false", k.source.size(), k.entry,
      k.sameCodeAs < 0 ? std::string("null") : fmt::format("{}", k.sameCodeAs));
}

} // namespace

std::string kernelsJson(const CompiledModule &m) {
  std::string kernels;
  for (const CompiledKernel &k : m.kernels)
    kernels += fmt::format("{}\n    {}", kernels.empty() ? "" : ",", kernelJson(k));
  return fmt::format(
      "{{\"graph\": \"{}\", \"arch\": \"{}\", \"device\": \"{}\", \"jobs\": {}, "
      "\"plan_ms\": {:.3f}, \"codegen_ms\": {:.3f}, \"nvrtc_wall_ms\": {:.3f}, "
      "\"total_ms\": {:.3f}, \"expected_seconds\": {:.6g},\n  \"kernels\": [{}\n  ]}}\n",
      jsonEscape(m.name), m.arch, jsonEscape(m.target.name), m.jobs, m.planMs, m.codegenMs,
      m.nvrtcWallMs, m.totalMs, m.expectedSeconds(), kernels);
}

void writeDump(const CompiledModule &m, const std::string &dir) {
  fs::path root = fs::path(dir) / codegen::mangle(m.name.empty() ? "graph" : m.name);
  std::error_code ec;
  fs::create_directories(root / "kernels", ec);
  if (ec)
    fail("cannot create the dump directory '{}': {}", (root / "kernels").string(), ec.message());
  if (m.input)
    writeFile(root / "00-input.kf", printGraph(*m.input));
  for (size_t i = 0; i < m.passDumps.size(); ++i)
    writeFile(root / fmt::format("{:02}-after-{}.kf", i + 1, m.passDumps[i].first),
              m.passDumps[i].second);
  if (m.plan)
    writeFile(root / "plan.kf", printGraph(*m.plan));
  writeFile(root / "fusion.json", m.fusion.json() + "\n");
  std::string options;
  for (const std::string &o : m.nvrtcOptions)
    options += o + "\n";
  writeFile(root / "nvrtc-options.txt", options);
  for (const CompiledKernel &k : m.kernels) {
    fs::path base = root / "kernels" / k.spec.mangled;
    writeFile(base.string() + ".cu", k.source);
    if (k.sameCodeAs >= 0)
      continue; // compiled once, with the kernel it names in kernels.json (same_code_as)
    if (!k.ptx.empty())
      writeFile(base.string() + ".ptx", k.ptx);
    if (!k.ptxasLog.empty())
      writeFile(base.string() + ".ptxas.txt", k.ptxasLog + "\n");
  }
  writeFile(root / "kernels.json", kernelsJson(m));
}

} // namespace kfuse::compiler
