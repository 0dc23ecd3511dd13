#pragma once
/// The pass manager runs a pipeline (a list of pass names from passes/Passes.def) over a
/// graph, with the usual debugging aids: print after all passes or after one, verify after
/// each pass, time each pass. Printing goes through a callback so this stage does not
/// depend on the printer's file (tools pass ir/Printer.h's printGraph).
#include "ir/Graph.h"
#include "passes/Fusion.h"
#include "passes/Pass.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kfuse {

/// The names of every pass, in Passes.def order.
std::vector<std::string> knownPasses();
/// Creates a pass by name; throws kfuse::Error listing the known passes for an unknown one.
std::unique_ptr<Pass> createPass(std::string_view name, PassContext ctx = {});
/// "-O0" -> {}, "-O1"/"-O2" -> simplify,cse,dce,fuse; otherwise a comma-separated list of
/// names ("simplify,cse"), each checked. Throws kfuse::Error on an unknown name or level.
std::vector<std::string> parsePipeline(std::string_view spec);
/// The default pipeline, -O2.
std::vector<std::string> defaultPipeline();

struct PassManagerOptions {
  bool printAfterAll = false;
  std::vector<std::string> printAfter; ///< pass names to print after
  bool verifyEach = false;
  bool timePasses = false;
  bool explainFusion = false; ///< the fusion log says why each fused edge fused too
  /// Sibling matmuls fuse only where this allows (unset: never; see passes/Pass.h).
  SiblingGemmPolicy siblingGemm;
  /// Turns a graph into text for printing; required when any print option is set.
  std::function<std::string(const Graph &)> printer;
};

struct PassRecord {
  std::string name;
  bool changed = false;
  double seconds = 0.0;
};

class PassManager {
public:
  explicit PassManager(PassManagerOptions opts = {});
  ~PassManager();

  void addPass(std::string_view name);
  void addPipeline(llvm::ArrayRef<std::string> names);
  size_t size() const { return passes_.size(); }

  /// Runs every pass in order on `g`; returns whether any changed it. Text requested by
  /// the print and time options is appended to `log` ("// -----// IR after simplify" headers,
  /// "(unchanged)" for a pass that changed nothing). Verification failures after a pass
  /// throw kfuse::Error naming that pass.
  bool run(Graph &g, std::string *log = nullptr);

  const std::vector<PassRecord> &records() const { return records_; }
  /// Decisions of the fusion pass(es) run so far.
  const FusionLog &fusionLog() const { return *fusionLog_; }
  /// "pass timing:" table of the last run.
  std::string timingReport() const;

private:
  PassManagerOptions opts_;
  std::unique_ptr<FusionLog> fusionLog_;
  std::vector<std::unique_ptr<Pass>> passes_;
  std::vector<PassRecord> records_;
};

} // namespace kfuse
