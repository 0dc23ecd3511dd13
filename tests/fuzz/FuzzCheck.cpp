#include "fuzz/FuzzCheck.h"

#include "codegen/CudaCodegen.h"
#include "codegen/KernelSpec.h"
#include "ir/Error.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "target/Target.h"
#include "passes/PassManager.h"
#include "analysis/Report.h"

#include <cstdio>
#include <cstdlib>

namespace kfuse::fuzz {

// Past this size only the parser/printer checks run: the pipeline is near-linear but the
// fuzzer should spend its executions on many small inputs.
static constexpr size_t kPipelineMaxNodes = 200;

void finding(const std::string &what, const std::string &detail) {
  std::fprintf(stderr, "fuzz finding: %s\n%s\n", what.c_str(), detail.c_str());
  std::abort();
}

static void mustVerify(const Graph &g, const char *when) {
  try {
    verify(g);
  } catch (const Error &e) {
    finding(std::string("graph does not verify ") + when,
            std::string(e.what()) + "\n" + printGraph(g));
  }
}

/// print -> parse -> print must be the identity.
static void roundTrip(const Graph &g, const char *when) {
  std::string text = printGraph(g);
  std::unique_ptr<Graph> back;
  try {
    back = parseGraph(text, "printed.kf");
  } catch (const Error &e) {
    finding(std::string("printed text does not parse ") + when,
            std::string(e.what()) + "\n" + text);
  }
  std::string again = printGraph(*back);
  if (again != text)
    finding(std::string("print -> parse -> print differs ") + when,
            "first:\n" + text + "second:\n" + again);
}

void checkAcceptedGraph(const Graph &g) {
  mustVerify(g, "after it was accepted");
  roundTrip(g, "(accepted graph)");
  std::unique_ptr<Graph> c = g.clone();
  if (printGraph(*c) != printGraph(g))
    finding("a clone prints differently", printGraph(g) + printGraph(*c));
  if (g.numNodes() > kPipelineMaxNodes)
    return;
  try {
    PassManagerOptions opts;
    opts.verifyEach = true;
    PassManager pm(opts);
    pm.addPipeline(defaultPipeline());
    pm.run(*c);
  } catch (const Error &e) {
    finding("the -O2 pipeline failed", std::string(e.what()) + "\n" + printGraph(g));
  }
  mustVerify(*c, "after -O2");
  roundTrip(*c, "(after -O2)");
  try {
    TrafficReport r = buildReport(g, parseTarget("h200"));
    (void)formatReport(r);
    (void)reportJson(r);
  } catch (const Error &e) {
    finding("the traffic report failed", std::string(e.what()) + "\n" + printGraph(g));
  }
  std::vector<codegen::KernelSpec> specs;
  try {
    specs = codegen::buildKernelSpecs(*c);
  } catch (const Error &) {
    return; // documented limits (matmul kernels are not generated yet)
  }
  try {
    (void)codegen::emitProgram(specs);
  } catch (const Error &e) {
    finding("codegen failed on kernel specs it built",
            std::string(e.what()) + "\n" + printGraph(*c));
  }
}

} // namespace kfuse::fuzz
