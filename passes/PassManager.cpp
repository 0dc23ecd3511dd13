#include "passes/PassManager.h"

#include "ir/Error.h"
#include "ir/Verifier.h"
#include "passes/Fusion.h"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>

namespace kfuse {

std::vector<std::string> knownPasses() {
  return {
#define KF_PASS(name, Class) name,
#include "passes/Passes.def"
  };
}

std::unique_ptr<Pass> createPass(std::string_view name, PassContext ctx) {
#define KF_PASS(passName, Class)                                                                   \
  if (name == passName)                                                                            \
    return std::make_unique<Class>(ctx);
#include "passes/Passes.def"
  std::vector<std::string> known = knownPasses();
  fail("unknown pass '{}'; known passes: {}", name, fmt::join(known, ", "));
}

std::vector<std::string> defaultPipeline() { return {"simplify", "cse", "dce", "fuse"}; }

std::vector<std::string> parsePipeline(std::string_view spec) {
  if (spec == "-O0" || spec == "O0")
    return {};
  if (spec == "-O1" || spec == "-O2" || spec == "O1" || spec == "O2")
    return defaultPipeline();
  if (!spec.empty() && spec[0] == '-')
    fail("unknown optimisation level '{}'; use -O0 or -O2", spec);
  std::vector<std::string> names;
  std::vector<std::string> known = knownPasses();
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    std::string_view item =
        spec.substr(pos, comma == std::string_view::npos ? spec.npos : comma - pos);
    while (!item.empty() && item.front() == ' ')
      item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ')
      item.remove_suffix(1);
    if (!item.empty()) {
      if (std::find(known.begin(), known.end(), item) == known.end())
        fail("unknown pass '{}'; known passes: {}", item, fmt::join(known, ", "));
      names.emplace_back(item);
    }
    if (comma == std::string_view::npos)
      break;
    pos = comma + 1;
  }
  return names;
}

PassManager::PassManager(PassManagerOptions opts)
    : opts_(std::move(opts)), fusionLog_(std::make_unique<FusionLog>()) {
  fusionLog_->withFused = opts_.explainFusion;
  std::vector<std::string> known = knownPasses();
  for (const std::string &p : opts_.printAfter)
    if (std::find(known.begin(), known.end(), p) == known.end())
      fail("--print-after: unknown pass '{}'; known passes: {}", p, fmt::join(known, ", "));
}

PassManager::~PassManager() = default;

void PassManager::addPass(std::string_view name) {
  PassContext ctx;
  ctx.fusionLog = fusionLog_.get();
  ctx.siblingGemm = opts_.siblingGemm;
  passes_.push_back(createPass(name, ctx));
}

void PassManager::addPipeline(llvm::ArrayRef<std::string> names) {
  for (const std::string &n : names)
    addPass(n);
}

bool PassManager::run(Graph &g, std::string *log) {
  records_.clear();
  bool any = false;
  bool printing = opts_.printAfterAll || !opts_.printAfter.empty();
  if (printing && !opts_.printer)
    fail("pass manager: printing was requested but no printer was given");
  for (auto &p : passes_) {
    auto t0 = std::chrono::steady_clock::now();
    bool changed = p->run(g);
    // cse, dce and simplify erase nodes without knowing about regions; on an already fused
    // graph that can leave a kernel empty, which would neither verify nor parse back.
    changed |= g.removeEmptyKernels();
    auto t1 = std::chrono::steady_clock::now();
    records_.push_back(
        {std::string(p->name()), changed, std::chrono::duration<double>(t1 - t0).count()});
    any |= changed;
    if (opts_.verifyEach) {
      try {
        verify(g);
      } catch (const Error &e) {
        fail("after pass '{}': {}", p->name(), e.what());
      }
    }
    bool print = opts_.printAfterAll || std::find(opts_.printAfter.begin(), opts_.printAfter.end(),
                                                  p->name()) != opts_.printAfter.end();
    if (print && log) {
      *log += fmt::format("// -----// IR after {}{} //----- //\n", p->name(),
                          changed ? "" : " (unchanged)");
      if (changed)
        *log += opts_.printer(g);
    }
  }
  if (opts_.timePasses && log)
    *log += timingReport();
  return any;
}

std::string PassManager::timingReport() const {
  std::string s = "// pass timing:\n";
  double total = 0;
  for (const PassRecord &r : records_) {
    s += fmt::format("//   {:<10} {:>10.3f} ms{}\n", r.name, r.seconds * 1e3,
                     r.changed ? "" : "  (unchanged)");
    total += r.seconds;
  }
  s += fmt::format("//   {:<10} {:>10.3f} ms\n", "total", total * 1e3);
  return s;
}

} // namespace kfuse
