// The full -O2 pipeline on >= 1000 random graphs (tests/unit/RandomGraph.h): the result
// verifies, keeps its outputs' types, and its kernels obey the fusion rules: every op in
// exactly one kernel, at most one matmul per kernel, a matmul's operands never computed in
// its own kernel, the other nodes of a matmul kernel are its epilogue, and fusion never adds launches or bytes over the unfused plan.
#include "RandomGraph.h"

#include "ir/Verifier.h"
#include "passes/PassManager.h"
#include "analysis/Traffic.h"

#include <catch2/catch.hpp>

using namespace kfuse;

TEST_CASE("random graphs: the -O2 pipeline keeps graphs valid and kernels lawful",
          "[fusion][random]") {
  Target d = parseTarget("seed");
  for (uint64_t seed = 0; seed < 1500; ++seed) {
    INFO("seed " << seed);
    auto g = test::randomGraph(seed);
    verify(*g);
    auto opt = g->clone();
    PassManagerOptions o;
    o.verifyEach = true;
    PassManager pm(o);
    pm.addPipeline(defaultPipeline());
    pm.run(*opt);
    verify(*opt);
    REQUIRE(opt->outputs().size() == g->outputs().size());
    for (size_t i = 0; i < g->outputs().size(); ++i)
      REQUIRE(opt->outputs()[i]->type() == g->outputs()[i]->type());
    std::vector<int> matmuls(opt->kernelNames().size(), 0);
    for (const Node *n : opt->nodes()) {
      if (n->isInput())
        continue;
      REQUIRE(n->kernel() >= 0);
      if (n->kind() == OpKind::MatMul) {
        ++matmuls[n->kernel()];
        for (const Operand &op : n->operands())
          REQUIRE(op.node->kernel() != n->kernel());
      }
    }
    for (int m : matmuls)
      REQUIRE(m <= 1);
    // In a matmul kernel every other node is epilogue (reads a value of the kernel) or a
    // recomputed broadcast value used only inside it.
    for (const Node *n : opt->nodes()) {
      if (n->isInput() || n->kind() == OpKind::MatMul || !matmuls[n->kernel()])
        continue;
      bool readsKernel = false;
      for (const Operand &op : n->operands())
        readsKernel |= op.node && op.node->kernel() == n->kernel();
      bool internal = !opt->isOutput(n);
      for (const Node *u : n->users())
        internal &= u->kernel() == n->kernel();
      REQUIRE((readsKernel || internal));
    }
    TrafficPlan before = unfusedTraffic(*g, d), after = fusedTraffic(*opt, d);
    REQUIRE(after.launches() <= before.launches());
    REQUIRE(after.bytes() <= before.bytes());
  }
}
