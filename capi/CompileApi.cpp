// The C API's compiler (include/kfuse/kfuse.h): kfuse_compile_options to
// compiler::CompileOptions, compiler::compile, and what the module says about itself: the
// kernels' CUDA C, the plan, and the JSON of `kfuse report --json` and the dumps.
#include "capi/Api.h"

#include "analysis/Report.h"
#include "compiler/Dump.h"
#include "compiler/Nvrtc.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "runtime/Driver.h"
#include "runtime/Executable.h"

#include <algorithm>
#include <fmt/ranges.h>

using namespace kfuse;
using capi::failWith;
using capi::guard;
using capi::moduleArg;
using capi::need;

namespace {

/// The C options as CompileOptions: the device model first (its rates), then the
/// architecture codegen targets on it, as the CLI's --device and --arch do.
compiler::CompileOptions optionsArg(const kfuse_compile_options *o) {
  kfuse_compile_options c;
  kfuse_compile_options_init(&c);
  if (o) {
    if (o->struct_size < sizeof(kfuse_compile_options))
      failWith(KFUSE_ERROR_INVALID_ARGUMENT,
               "options->struct_size is {}, expected {}: initialise the options with "
               "kfuse_compile_options_init",
               o->struct_size, sizeof(kfuse_compile_options));
    c = *o;
  }
  if (int stage = static_cast<int>(c.stage); stage < KFUSE_STAGE_PLAN || stage > KFUSE_STAGE_CUBIN)
    failWith(KFUSE_ERROR_INVALID_ARGUMENT, "options->stage {} is not a kfuse_stage",
             static_cast<int>(c.stage));
  compiler::CompileOptions out;
  try {
    if (c.device && *c.device)
      out.target = parseTarget(c.device);
    std::string arch = c.arch ? c.arch : "";
    if (arch == "device") {
      runtime::Driver *d = runtime::Driver::get();
      if (!d)
        failWith(KFUSE_ERROR_NO_DEVICE, "arch \"device\": {}",
                 runtime::Driver::unavailableReason());
      out = runtime::deviceOptions(*d, std::move(out));
    } else if (!arch.empty()) {
      out.target = withArch(std::move(out.target), arch);
    }
  } catch (const capi::CApiError &) {
    throw;
  } catch (const Error &e) {
    failWith(KFUSE_ERROR_INVALID_ARGUMENT, "options: {}", e.what());
  }
  std::vector<int> known = compiler::nvrtcSupportedArchs();
  if (c.stage == KFUSE_STAGE_CUBIN && !known.empty() &&
      std::find(known.begin(), known.end(), static_cast<int>(out.target.sm)) == known.end())
    failWith(KFUSE_ERROR_INVALID_ARGUMENT, "options: arch {}: NVRTC {} compiles for sm_{}",
             compileArch(out.target), compiler::nvrtcVersionString(), fmt::join(known, ", sm_"));
  out.allowTf32 = c.tf32 != 0;
  out.planning = c.fusion ? compiler::Planning::Fused : compiler::Planning::Unfused;
  out.jobs = c.jobs;
  out.until = static_cast<compiler::Stage>(c.stage);
  if (c.dump_dir)
    out.dumpDir = c.dump_dir;
  return out;
}

static_assert(static_cast<int>(compiler::Stage::Plan) == KFUSE_STAGE_PLAN &&
                  static_cast<int>(compiler::Stage::Source) == KFUSE_STAGE_SOURCE &&
                  static_cast<int>(compiler::Stage::Cubin) == KFUSE_STAGE_CUBIN,
              "kfuse_stage and compiler::Stage number the stages alike");

/// The module's answers, built once (capi/Api.h: reading them is then thread-safe).
void describe(kfuse_module_s &m, const Graph &input) {
  const compiler::CompiledModule &cm = m.module;
  m.planText = cm.plan ? printGraph(*cm.plan) : "";
  m.fusionJson = cm.fusion.json();
  m.kernelsJson = compiler::kernelsJson(cm);
  std::vector<NamedEstimate> estimates; // the plan's table at the kernels' estimates
  for (const compiler::CompiledKernel &k : cm.kernels)
    estimates.push_back({k.spec.name, k.estimate.seconds, k.estimate.computeBound});
  if (cm.plan)
    m.reportJson =
        reportJson(buildReport(input, cm.plan->clone(), cm.fusion, cm.target, estimates));
}

const compiler::CompiledKernel &kernelArg(const kfuse_module_s &m, size_t i) {
  capi::checkIndex(i, m.module.kernels.size(), "kernel");
  return m.module.kernels[i];
}

} // namespace

extern "C" {

kfuse_status kfuse_compile_options_init(kfuse_compile_options *o) {
  return guard("kfuse_compile_options_init", KFUSE_ERROR_INTERNAL, [&] {
    need(o, "options");
    *o = kfuse_compile_options{};
    o->struct_size = sizeof(kfuse_compile_options);
    o->arch = nullptr;
    o->device = nullptr;
    o->tf32 = 0;
    o->fusion = 1;
    o->jobs = 0;
    o->stage = KFUSE_STAGE_CUBIN;
    o->dump_dir = nullptr;
  });
}

kfuse_status kfuse_compile(kfuse_graph g, const kfuse_compile_options *o, kfuse_module *out) {
  return guard("kfuse_compile", KFUSE_ERROR_COMPILE, [&] {
    const Graph &graph = *capi::graphArg(g).graph;
    need(out, "out");
    compiler::CompileOptions options = optionsArg(o);
    try {
      verify(graph);
    } catch (const Error &e) {
      failWith(KFUSE_ERROR_INVALID_GRAPH, "{}", e.what());
    }
    auto m = std::make_unique<kfuse_module_s>();
    m->module = compiler::compile(graph, options);
    m->stage = options.until;
    describe(*m, graph);
    *out = m.release();
  });
}

kfuse_status kfuse_module_destroy(kfuse_module m) {
  delete m;
  return KFUSE_OK;
}

kfuse_status kfuse_module_arch(kfuse_module m, const char **arch) {
  return guard("kfuse_module_arch", KFUSE_ERROR_INTERNAL, [&] {
    kfuse_module_s &M = moduleArg(m);
    *need(arch, "arch") = M.module.arch.c_str();
  });
}

kfuse_status kfuse_module_num_kernels(kfuse_module m, size_t *n) {
  return guard("kfuse_module_num_kernels", KFUSE_ERROR_INTERNAL, [&] {
    kfuse_module_s &M = moduleArg(m);
    *need(n, "n") = M.module.kernels.size();
  });
}

kfuse_status kfuse_module_kernel_name(kfuse_module m, size_t i, const char **name) {
  return guard("kfuse_module_kernel_name", KFUSE_ERROR_INTERNAL, [&] {
    kfuse_module_s &M = moduleArg(m);
    need(name, "name");
    *name = kernelArg(M, i).spec.name.c_str();
  });
}

kfuse_status kfuse_module_kernel_source(kfuse_module m, size_t i, const char **source) {
  return guard("kfuse_module_kernel_source", KFUSE_ERROR_INTERNAL, [&] {
    kfuse_module_s &M = moduleArg(m);
    need(source, "source");
    *source = kernelArg(M, i).source.c_str();
  });
}

kfuse_status kfuse_module_plan(kfuse_module m, const char **text) {
  return guard("kfuse_module_plan", KFUSE_ERROR_INTERNAL,
               [&] { *need(text, "text") = moduleArg(m).planText.c_str(); });
}

kfuse_status kfuse_module_expected_seconds(kfuse_module m, double *seconds) {
  return guard("kfuse_module_expected_seconds", KFUSE_ERROR_INTERNAL,
               [&] { *need(seconds, "seconds") = moduleArg(m).module.expectedSeconds(); });
}

kfuse_status kfuse_module_report_json(kfuse_module m, const char **json) {
  return guard("kfuse_module_report_json", KFUSE_ERROR_INTERNAL,
               [&] { *need(json, "json") = moduleArg(m).reportJson.c_str(); });
}

kfuse_status kfuse_module_fusion_json(kfuse_module m, const char **json) {
  return guard("kfuse_module_fusion_json", KFUSE_ERROR_INTERNAL,
               [&] { *need(json, "json") = moduleArg(m).fusionJson.c_str(); });
}

kfuse_status kfuse_module_kernels_json(kfuse_module m, const char **json) {
  return guard("kfuse_module_kernels_json", KFUSE_ERROR_INTERNAL,
               [&] { *need(json, "json") = moduleArg(m).kernelsJson.c_str(); });
}

} // extern "C"
