#include "compiler/Compile.h"

#include "compiler/Dump.h"
#include "compiler/KernelCache.h"
#include "compiler/Nvrtc.h"
#include "compiler/SameCode.h"
#include "ir/Error.h"
#include "ir/ParallelFor.h"
#include "ir/Printer.h"
#include "passes/PassManager.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <regex>
#include <thread>
#include <unordered_map>

namespace kfuse::compiler {

using namespace codegen;

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/// Runs the planning `o` asks for on `plan` (a copy of the user's graph); fills the
/// module's fusion decisions and, when kept, the IR after each pass.
void planGraph(Graph &plan, const CompileOptions &o, CompiledModule &m) {
  switch (o.planning) {
  case Planning::AsGiven:
    return;
  case Planning::Unfused:
    plan.clearKernels();
    return;
  case Planning::Fused:
    break;
  }
  PassManagerOptions popts;
  popts.siblingGemm = siblingGemmPolicy(o.target, o.allowTf32);
  if (!o.keepPassDumps) {
    PassManager pm(popts);
    pm.addPipeline(defaultPipeline());
    pm.run(plan);
    m.fusion = pm.fusionLog();
    return;
  }
  // One pass at a time, so the dump has the whole IR after each (changed or not), and
  // fusion.json why each edge fused too.
  m.fusion.withFused = true;
  PassManagerOptions explain = popts;
  explain.explainFusion = true;
  for (const std::string &name : defaultPipeline()) {
    PassManager pm(explain);
    pm.addPass(name);
    pm.run(plan);
    for (const FusionEdge &e : pm.fusionLog().edges)
      m.fusion.edges.push_back(e);
    m.passDumps.emplace_back(name, printGraph(plan));
  }
}

/// Binds the graph's inputs and outputs to the caller's buffers; an output that is an input,
/// or the same value as an earlier output, is a copy (no kernel writes it twice).
void bindGraph(const Graph &g, CompiledModule &m) {
  for (const Node *n : g.inputs())
    m.inputIds.push_back(n->id());
  std::unordered_map<unsigned, int> inputIndex, outputIndex;
  for (size_t i = 0; i < m.inputIds.size(); ++i)
    inputIndex.emplace(m.inputIds[i], static_cast<int>(i));
  for (const Node *n : g.outputs()) {
    int src = -1;
    if (auto it = inputIndex.find(n->id()); it != inputIndex.end())
      src = it->second;
    else if (auto jt = outputIndex.find(n->id()); jt != outputIndex.end())
      src = -2 - jt->second;
    outputIndex.emplace(n->id(), static_cast<int>(m.outputIds.size()));
    m.outputCopyOf.push_back(src);
    m.outputIds.push_back(n->id());
    m.outputBytes.push_back(static_cast<size_t>(n->type().bytes()));
  }
}

unsigned jobsFor(const CompileOptions &o, size_t kernels) {
  unsigned j = o.jobs;
  if (j == 0) {
    if (const char *e = std::getenv("KFUSE_COMPILE_JOBS"); e && *e)
      j = static_cast<unsigned>(std::max(1, std::atoi(e)));
    else
      j = std::max(1u, std::thread::hardware_concurrency());
  }
  return static_cast<unsigned>(std::clamp<size_t>(kernels, 1, j));
}

std::string dumpDirOf(const CompileOptions &o) {
  if (!o.dumpDir.empty())
    return o.dumpDir;
  const char *e = std::getenv("KFUSE_DUMP");
  return e ? e : "";
}

/// Codegen and NVRTC for every kernel of `m` (specs set), each its own program, in parallel.
void buildKernels(CompiledModule &m, const CompileOptions &o) {
  auto t0 = Clock::now();
  CodegenOptions co = o.codegen;
  uint64_t maxBlocks = uint64_t(std::max(1u, m.target.smCount)) * (2048 / co.block);
  for (CompiledKernel &k : m.kernels) {
    k.source = emitKernelSource(k.spec, co); // only the helpers it uses
    k.launch = k.spec.launchConfig(co.block, maxBlocks);
    k.estimate = estimateKernel(k.spec, m.target);
  }
  m.codegenMs = msSince(t0);
  m.arch = compileArch(m.target);
  m.nvrtcOptions = nvrtcOptions(m.arch);
  // Kernels whose code is the same (a repeated layer, a capped chain's pieces) are compiled
  // once; the others take its cubin and call its entry.
  std::vector<std::string_view> sources, names;
  for (const CompiledKernel &k : m.kernels) {
    sources.push_back(k.source);
    names.push_back(k.spec.mangled);
  }
  std::vector<int> same = firstWithSameCode(sources, names);
  std::vector<size_t> distinct;
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    m.kernels[i].sameCodeAs = same[i];
    m.kernels[i].entry = m.kernels[same[i] < 0 ? i : size_t(same[i])].spec.mangled;
    if (same[i] < 0)
      distinct.push_back(i);
  }
  if (o.until != Stage::Cubin && !o.wantPtx)
    return;
  auto t1 = Clock::now();
  m.jobs = jobsFor(o, distinct.size());
  parallelFor(distinct.size(), m.jobs, [&](size_t d) {
    CompiledKernel &k = m.kernels[distinct[d]];
    auto tk = Clock::now();
    if (o.until == Stage::Cubin) {
      CachedKernel c = cachedCompile(k.source, m.arch);
      k.cubin = std::move(c.cubin);
      k.ptxasLog = std::move(c.info);
      k.cached = c.from != CachedKernel::Compiled;
      k.ptxas = parsePtxasInfo(k.ptxasLog, k.spec.mangled);
    }
    if (o.wantPtx)
      k.ptx = nvrtcCompile(k.source, m.arch, true).ptx;
    k.compileMs = msSince(tk);
  });
  for (CompiledKernel &k : m.kernels)
    if (k.sameCodeAs >= 0) {
      const CompiledKernel &f = m.kernels[size_t(k.sameCodeAs)];
      k.cubin = f.cubin;
      k.ptx = f.ptx;
      k.ptxasLog = f.ptxasLog;
      k.ptxas = f.ptxas;
      k.cached = f.cached;
    }
  m.nvrtcWallMs = msSince(t1);
}

CompiledModule startModule(const CompileOptions &o) {
  CompiledModule m;
  m.target = o.target;
  m.allowTf32 = o.allowTf32;
  return m;
}

void finish(CompiledModule &m, const CompileOptions &o, Clock::time_point t0) {
  m.totalMs = msSince(t0);
  if (std::string dir = dumpDirOf(o); !dir.empty())
    writeDump(m, dir);
}

} // namespace

double CompiledModule::expectedSeconds() const {
  double s = 0;
  for (const CompiledKernel &k : kernels)
    s += k.estimate.seconds;
  return target.graphSeconds(s, kernels.size());
}

std::vector<KernelSpec> CompiledModule::specs() const {
  std::vector<KernelSpec> out;
  for (const CompiledKernel &k : kernels)
    out.push_back(k.spec);
  return out;
}

CompiledModule compile(const Graph &g, const CompileOptions &options) {
  auto t0 = Clock::now();
  CompileOptions o = options;
  bool dumping = !dumpDirOf(o).empty();
  o.keepPassDumps = o.keepPassDumps || dumping;
  o.wantPtx = o.wantPtx || dumping; // the dump shows each kernel's PTX
  CompiledModule m = startModule(o);
  m.name = g.name();
  if (o.keepPassDumps) // the dump's 00-input.kf; a plain compile needs no second copy
    m.input = g.clone();
  std::unique_ptr<Graph> plan = g.clone();
  planGraph(*plan, o, m);
  m.planMs = msSince(t0);
  if (o.until == Stage::Plan) {
    bindGraph(*plan, m);
    m.plan = std::move(plan);
    finish(m, o, t0);
    return m;
  }
  std::vector<KernelSpec> specs = buildKernelSpecs(*plan, m.target, o.tuning, o.allowTf32);
  if (o.tuner) {
    GemmTuning tuned = o.tuner(specs);
    specs = buildKernelSpecs(*plan, m.target, &tuned, o.allowTf32);
  }
  for (KernelSpec &s : specs)
    m.kernels.push_back(CompiledKernel{.spec = std::move(s)});
  bindGraph(*plan, m);
  m.plan = std::move(plan);
  buildKernels(m, o);
  finish(m, o, t0);
  return m;
}

CompiledModule compileKernels(std::vector<KernelSpec> specs, std::vector<unsigned> inputIds,
                              std::vector<unsigned> outputIds, const CompileOptions &o) {
  auto t0 = Clock::now();
  CompiledModule m = startModule(o);
  m.name = specs.empty() ? "kernels" : specs.front().name;
  for (KernelSpec &s : specs)
    m.kernels.push_back(CompiledKernel{.spec = std::move(s)});
  m.inputIds = std::move(inputIds);
  m.outputIds = std::move(outputIds);
  m.outputCopyOf.assign(m.outputIds.size(), -1);
  m.outputBytes.assign(m.outputIds.size(), 0);
  buildKernels(m, o);
  finish(m, o, t0);
  return m;
}

PtxasInfo parsePtxasInfo(const std::string &log, const std::string &mangled) {
  PtxasInfo info;
  // ptxas -v writes, per entry function:
  //   ptxas info    : Compiling entry function 'NAME' for 'sm_90a'
  //   ptxas info    : Function properties for NAME
  //       16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  //   ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem, 400 bytes cmem[0]
  size_t at = log.find("Compiling entry function '" + mangled + "'");
  if (at == std::string::npos)
    return info;
  size_t end = log.find("Compiling entry function '", at + 1);
  std::string block = log.substr(at, end == std::string::npos ? std::string::npos : end - at);
  static const std::regex frame(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex regs(R"(Used (\d+) registers)"), smem(R"((\d+) bytes smem)");
  std::smatch m;
  if (std::regex_search(block, m, frame)) {
    info.stackBytes = std::stoi(m[1]);
    info.spillStores = std::stoi(m[2]);
    info.spillLoads = std::stoi(m[3]);
  }
  if (std::regex_search(block, m, regs))
    info.registers = std::stoi(m[1]);
  if (std::regex_search(block, m, smem))
    info.sharedBytes = std::stoi(m[1]);
  else if (info.registers >= 0)
    info.sharedBytes = 0;
  return info;
}

} // namespace kfuse::compiler
