// Fusion: chains, epilogues, siblings, diamonds, broadcast producers, cycles, outputs.
// Every test checks the kernel each node lands in and ends by verifying the graph.
#include "passes/Fusion.h"
#include "ir/Builder.h"
#include "ir/KernelRegion.h"
#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "passes/PassManager.h"
#include "unit/TestTiming.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <ctime>
#include <set>

using namespace kfuse;

static FusionLog fuse(Graph &g, bool withFused = false) {
  FusionLog log;
  log.withFused = withFused;
  CHECK(fuseGraph(g, &log));
  verify(g);
  for (const Node *n : g.nodes())
    CHECK((n->isInput() ? n->kernel() == -1 : n->kernel() >= 0));
  return log;
}

static bool hasReason(const FusionLog &log, const std::string &part) {
  for (const FusionEdge &e : log.edges)
    if (e.reason.find(part) != std::string::npos)
      return true;
  return false;
}

TEST_CASE("an elementwise chain is one kernel", "[fusion]") {
  Graph g;
  auto x = g.input("x", f32, {1024});
  auto y = exp(relu(x * 2.0) + 1.0);
  g.output(y);
  auto log = fuse(g);
  CHECK(g.kernelNames().size() == 1);
  CHECK(g.kernelNames()[0] == "k0");
  CHECK(log.unfused() == 0);
}

TEST_CASE("matmul + bias + relu: the epilogue joins the matmul kernel", "[fusion]") {
  Graph g;
  auto x = g.input("x", bf16, {64, 128});
  auto w = g.input("w", bf16, {256, 128});
  auto b = g.input("b", bf16, {256});
  auto pre = x * 0.5; // computed operand: read from memory by the matmul
  auto h = matmul(pre, w, {.transB = true});
  auto y = relu(h + b);
  g.output(y);
  auto log = fuse(g);
  REQUIRE(g.kernelNames().size() == 2);
  CHECK(h->kernel() == y->kernel());
  CHECK(pre->kernel() != h->kernel());
  CHECK(pre->kernel() == 0);
  CHECK(hasReason(log, "a matmul reads its operands from memory"));
}

TEST_CASE("a matmul never fuses into another matmul kernel", "[fusion]") {
  Graph g;
  auto x = g.input("x", f32, {32, 32});
  auto w1 = g.input("w1", f32, {32, 32});
  auto w2 = g.input("w2", f32, {32, 32});
  auto h1 = matmul(x, w1);
  auto a = relu(h1);
  auto h2 = matmul(a, w2);
  auto s = h2 + h1; // both matmul results: joins one of them only
  g.output(s);
  auto log = fuse(g);
  CHECK(h1->kernel() == a->kernel());
  CHECK(h2->kernel() != h1->kernel());
  CHECK(s->kernel() == h2->kernel());
  CHECK(hasReason(log, "a matmul never fuses into another matmul kernel"));
  CHECK(hasReason(log, "matmul result has 2 consumers: recomputing is impossible, storing it "
                       "costs 4.1 KB"));
}

TEST_CASE("multi-consumer matmul result: both epilogues in one kernel", "[fusion]") {
  Graph g;
  auto x = g.input("x", f32, {16, 16});
  auto w = g.input("w", f32, {16, 16});
  auto h = matmul(x, w);
  g.output(relu(h));
  g.output(h * 2.0);
  fuse(g);
  CHECK(g.kernelNames().size() == 1);
}

TEST_CASE("the cycle case: a -> matmul -> c with a and c fusable", "[fusion]") {
  Graph g;
  auto x = g.input("x", f32, {32, 32});
  auto w = g.input("w", f32, {32, 32});
  auto a = exp(x);
  auto b = matmul(a, w);
  auto c = a + b; // c joins the matmul's epilogue; a stays apart (a -> b -> c)
  auto d = relu(a);
  g.output(c);
  g.output(d);
  fuse(g);
  CHECK(a->kernel() != b->kernel());
  CHECK(c->kernel() == b->kernel());
  CHECK(d->kernel() == a->kernel());

  // Elementwise only: a -> (kernel in between) -> c. m is in its own kernel because it is
  // a matmul; c must not join a's kernel although they have the same shape.
  Graph h;
  auto y = h.input("y", f32, {8, 8});
  auto v = h.input("v", f32, {8, 8});
  auto p = y * 2.0;
  auto q = matmul(p, v);
  auto r = relu(q) + 1.0;
  auto s = p * r;
  h.output(s);
  auto log = fuse(h);
  CHECK(p->kernel() != q->kernel());
  CHECK(s->kernel() == q->kernel());
  CHECK(s->kernel() != p->kernel());
  CHECK(hasReason(log, "epilogue"));
}

TEST_CASE("cycle through an elementwise kernel of another shape", "[fusion]") {
  Graph g;
  auto x = g.input("x", f32, {4, 8});
  auto a = x * 2.0;                               // [4, 8]
  auto t = matmul(a, g.input("w", f32, {8, 4}));  // [4, 4]
  auto u = matmul(t, g.input("w2", f32, {4, 8})); // [4, 8]
  auto c = a + u;
  g.output(c);
  fuse(g);
  CHECK(c->kernel() == u->kernel());
  CHECK(a->kernel() != c->kernel());
}

TEST_CASE("diamonds fuse into one kernel", "[fusion]") {
  Graph g;
  auto x = g.input("x", f32, {256});
  auto a = exp(x);
  auto l = a * 2.0, r = relu(a);
  g.output(l + r);
  auto log = fuse(g);
  CHECK(g.kernelNames().size() == 1);
  CHECK(log.unfused() == 0);
}

TEST_CASE("a value that is an output and consumed is written by its kernel", "[fusion]") {
  Graph g;
  auto x = g.input("x", f32, {256});
  auto a = exp(x);
  auto b = a + 1.0;
  g.output(a);
  g.output(b);
  fuse(g);
  CHECK(g.kernelNames().size() == 1);
  CHECK(a->kernel() == b->kernel());
  CHECK(g.outputs()[0] == a.node());
}

TEST_CASE("siblings reading the same input share a kernel", "[fusion]") {
  Graph g;
  auto x = g.input("x", f32, {1024});
  g.output(exp(x));
  g.output(relu(x));
  fuse(g);
  CHECK(g.kernelNames().size() == 1);
}

TEST_CASE("broadcast producers: recomputed when cheap, one-use ones moved", "[fusion]") {
  Graph g;
  auto x = g.input("x", f32, {64, 1024});
  auto b = g.input("b", f32, {1024});
  auto sb = exp(b); // [1024], read by two larger consumers in different kernels
  auto y1 = x + sb;
  auto m = matmul(y1, g.input("w", f32, {1024, 1024}));
  auto y2 = m * sb;
  g.output(y2);
  auto log = fuse(g);
  // sb is recomputed in y1's kernel and in the matmul epilogue's kernel.
  CHECK(g.kernelNames().size() == 2);
  CHECK(y1->kernel() != m->kernel());
  CHECK(y2->kernel() == m->kernel());
  size_t exps = 0;
  for (const Node *n : g.nodes())
    exps += n->kind() == OpKind::Exp;
  CHECK(exps == 2);
  CHECK(hasReason(log, "recomputed"));
}

TEST_CASE("a broadcast producer that is an output is stored and also recomputed", "[fusion]") {
  Graph g;
  auto x = g.input("x", f32, {64, 1024});
  auto b = g.input("b", f32, {1024});
  auto sb = relu(b);
  g.output(sb);
  g.output(x * sb);
  fuse(g);
  CHECK(g.outputs()[0] == sb.node());
  CHECK(g.outputs()[0]->kernel() >= 0);
  verify(g);
}

TEST_CASE("fuse is deterministic and kernels are named in program order", "[fusion]") {
  Graph g;
  auto x = g.input("x", f32, {8, 8});
  auto h = matmul(exp(x), x);
  g.output(relu(h));
  fuse(g);
  REQUIRE(g.kernelNames().size() == 2);
  int last = -1;
  for (const Node *n : g.nodes())
    if (n->kernel() >= 0) {
      CHECK(n->kernel() >= last);
      last = n->kernel();
    }
  CHECK(g.kernelNames()[1] == "k1");
  // Running fuse again regroups from scratch and finds nothing to change.
  CHECK(!fuseGraph(g));
  CHECK(g.kernelNames().size() == 2);
  verify(g);
}

TEST_CASE("FusionLog prints and serialises as JSON", "[fusion]") {
  FusionLog log;
  log.edges.push_back({"%a", "%b", false, "say \"why\""});
  CHECK(log.str() == "%a -> %b: not fused: say \"why\"\n");
  CHECK(log.json() ==
        "[{\"producer\": \"%a\", \"consumer\": \"%b\", \"fused\": false, \"reason\": \"say "
        "\\\"why\\\"\"}]");
  CHECK(!FusionDecision::forbid("no").canFuse());
  CHECK(FusionDecision::forbid("no").explain() == "no");
  CHECK(FusionDecision::allow().explain() == "fusible");
}

TEST_CASE("fuse is near-linear: 10^6 ops in seconds", "[fusion][perf]") {
  Graph g;
  auto x = g.input("x", f32, {16, 16});
  auto w = g.input("w", f32, {16, 16});
  Value v = x;
  for (int i = 0; i < 100000; ++i) {
    Value a = exp(v), b = relu(v);
    for (int j = 0; j < 3; ++j)
      a = a * b + 1.0;
    v = (i % 10 == 9) ? Value(matmul(a, w)) : a;
  }
  g.output(v);
  REQUIRE(g.numNodes() > 800000);
  auto t0 = std::chrono::steady_clock::now();
  fuseGraph(g);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(s < 10.0 * test::kTimeSlack);
  verify(g);
  CHECK(g.kernelNames().size() == 10000 + 1);
}

// Adversarial shapes for the near-linear promise. Before the fix the 200k chain took ~17 s
// (quadratic: every merge rescanned the group's dependencies) and the 100k-user fan-out
// ~4 s to verify; now both take well under a second, so the bounds are generous enough for
// a busy machine and a sanitizer build (about 3-5x slower) without ever hiding O(n^2).
#if defined(__SANITIZE_ADDRESS__)
static constexpr double kPerfSlack = 5.0;
#else
static constexpr double kPerfSlack = 1.0;
#endif

/// The op count of every kernel of a fused graph, in kernel order.
static std::vector<size_t> kernelSizes(const Graph &g) {
  std::vector<size_t> sizes(g.kernelNames().size(), 0);
  for (const Node *n : g.nodes())
    if (n->kernel() >= 0)
      ++sizes[n->kernel()];
  return sizes;
}

/// The kernel parameters of every kernel: its distinct tensors read from outside it and
/// its values written for outside readers or as graph outputs.
static std::vector<size_t> kernelTensors(const Graph &g) {
  std::vector<std::set<const Node *>> read(g.kernelNames().size());
  std::vector<size_t> written(g.kernelNames().size(), 0);
  for (const Node *n : g.nodes()) {
    if (n->kernel() < 0)
      continue;
    for (const Operand &o : n->operands())
      if (o.node && o.node->kernel() != n->kernel())
        read[n->kernel()].insert(o.node);
    bool out = g.isOutput(n);
    for (const Node *u : n->users())
      out = out || u->kernel() != n->kernel();
    written[n->kernel()] += out;
  }
  std::vector<size_t> r;
  for (size_t k = 0; k < read.size(); ++k)
    r.push_back(read[k].size() + written[k]);
  return r;
}

TEST_CASE("a 200,000-op chain fuses into 100 capped kernels in near-linear time",
          "[fusion][perf]") {
  Graph g("chain");
  Value v = g.input("x", f32, {16});
  for (int i = 1; i <= 200000; ++i)
    v = i % 2 ? v + 1.0 : relu(v);
  g.output(v);
  PassManager pm;
  pm.addPipeline(defaultPipeline());
  std::clock_t start = std::clock(); // CPU time: robust against a busy machine
  pm.run(g);
  double seconds = double(std::clock() - start) / CLOCKS_PER_SEC;
  verify(g);
  CHECK(g.numNodes() == 200001);
  // kMaxRegionOps (2000) ops per kernel: 100 kernels.
  CHECK(kernelSizes(g) == std::vector<size_t>(100, kMaxRegionOps));
  WARN("200,000-op chain: -O2 took " << seconds << " s of CPU");
  CHECK(seconds < 10.0 * kPerfSlack);
}

TEST_CASE("one input with 100,000 users parses, verifies and fuses in near-linear time",
          "[fusion][perf]") {
  const int n = 100000;
  std::string text = "graph fan {\n  %x = input f32[16]\n  %s0 = relu %x\n";
  for (int i = 1; i <= n; ++i)
    text += fmt::format("  %u{} = mul %x, {}.5\n  %s{} = add %s{}, %u{}\n", i, i, i, i - 1, i);
  text += fmt::format("  output %s{}\n}}\n", n);
  std::clock_t start = std::clock();
  auto graphs = parseModule(text, "fan.kf");
  Graph &g = *graphs[0];
  PassManager pm;
  pm.addPipeline(defaultPipeline());
  pm.run(g);
  verify(g);
  double seconds = double(std::clock() - start) / CLOCKS_PER_SEC;
  REQUIRE(g.inputs().size() == 1);
  CHECK(g.inputs()[0]->users().size() == n + 1);
  std::vector<size_t> sizes = kernelSizes(g);
  CHECK(sizes.size() == 101); // 200,001 ops, at most 2000 a kernel
  CHECK(*std::max_element(sizes.begin(), sizes.end()) <= kMaxRegionOps);
  WARN("100,000-user fan-out: parse + -O2 + verify took " << seconds << " s of CPU");
  CHECK(seconds < 10.0 * kPerfSlack);
}

TEST_CASE("a kernel holds at most kMaxRegionOps ops, and fusion says why it stops",
          "[fusion][caps]") {
  Graph g("chain");
  Value v = g.input("x", f32, {16});
  for (int i = 0; i < 5000; ++i)
    v = i % 2 ? v + 1.0 : relu(v);
  g.output(v);
  auto log = fuse(g);
  CHECK(kernelSizes(g) == std::vector<size_t>{2000, 2000, 1000});
  CHECK(log.unfused() == 2);
  CHECK(hasReason(log, "the kernel would hold 2001 ops, more than the 2000 one kernel may hold"));
}

TEST_CASE("a kernel takes at most kMaxRegionTensors parameters: inputs and outputs",
          "[fusion][caps]") {
  // A 4000-op chain that reads an input per op and writes every value as a graph output:
  // k ops of one kernel take 2k + 1 tensors, so a kernel stops at k = (cap - 1) / 2.
  Graph g("wide");
  Value v = g.input("x", f32, {16});
  for (int i = 0; i < 4000; ++i) {
    v = v + g.input(fmt::format("i{}", i), f32, {16});
    g.output(v);
  }
  auto log = fuse(g);
  const size_t k = (kMaxRegionTensors - 1) / 2, full = 4000 / k;
  std::vector<size_t> sizes(full, k), tensors(full, 2 * k + 1);
  sizes.push_back(4000 % k);
  tensors.push_back(2 * (4000 % k) + 1);
  CHECK(kernelSizes(g) == sizes);
  CHECK(kernelTensors(g) == tensors);
  CHECK(hasReason(log, fmt::format("the kernel would take {} tensors as parameters", 2 * k + 3)));
  CHECK(hasReason(log, fmt::format("more than the {} one kernel may take", kMaxRegionTensors)));

  // 2500 op pairs that each read two inputs of their own and write an output, all siblings
  // of one shared input: no kernel may take more than the cap.
  Graph h("outs");
  std::vector<Value> outs;
  for (int i = 0; i < 2500; ++i)
    outs.push_back(h.input(fmt::format("a{}", i), f32, {16}) *
                   h.input(fmt::format("b{}", i), f32, {16}));
  Value shared = h.input("s", f32, {16});
  for (Value &o : outs)
    o = o + shared; // siblings of `shared`: fusion tries to merge them all
  for (const Value &o : outs)
    h.output(o);
  fuse(h);
  for (size_t t : kernelTensors(h))
    CHECK(t <= kMaxRegionTensors);
  CHECK(h.kernelNames().size() >= 2500 * 3 / kMaxRegionTensors);

  // 10,000 consumers of one input, each an output: siblings fill kernels to the cap, then
  // fill new ones (they used to stop after 8 kernels and leave the rest alone).
  Graph c("consumers");
  Value x = c.input("x", f32, {16});
  for (int i = 0; i < 10000; ++i)
    c.output(x * double(i + 2));
  fuse(c);
  const size_t per = kMaxRegionTensors - 1;
  CHECK(c.kernelNames().size() == (10000 + per - 1) / per);
}

TEST_CASE("every fused edge says why: an epilogue, a row reduction, element by element, a "
          "broadcast",
          "[fusion]") {
  auto reasonOf = [](const FusionLog &log, const std::string &p, const std::string &c) {
    for (const FusionEdge &e : log.edges)
      if (e.producer == p && e.consumer == c)
        return std::string(e.fused ? "fused: " : "not fused: ") + e.reason;
    return std::string("no edge");
  };
  {
    // Not asked for: only the edges left apart are logged.
    Graph g("quiet");
    Value x = g.input("x", f32, {1024});
    g.output(relu(exp(x)));
    CHECK(fuse(g).edges.empty());
  }
  {
    Graph g("epilogue");
    Value x = g.input("x", DType::BF16, {64, 128}), w = g.input("w", DType::BF16, {128, 256});
    Value m = matmul(x, w);
    m->setName("m");
    Value r = relu(m);
    r->setName("r");
    g.output(r);
    FusionLog log = fuse(g, true);
    CHECK(log.unfused() == 0);
    CHECK(reasonOf(log, "%m", "%r") ==
          "fused: as the matmul's epilogue: %r runs on the matmul's tile before the store; %m "
          "stays in registers (saves writing and reading 65.5 KB)");
  }
  {
    Graph g("rows");
    Value x = g.input("x", f32, {8, 1024});
    Value e = exp(x);
    e->setName("e");
    Value s = sum(e, {-1}, true);
    s->setName("s");
    g.output(e / s);
    FusionLog log = fuse(g, true);
    CHECK(g.kernelNames().size() == 1);
    CHECK(reasonOf(log, "%e", "%s").rfind("fused: into one row-reduction kernel: %s reads %e", 0) ==
          0);
  }
  {
    Graph g("chain");
    Value x = g.input("x", f32, {1024});
    Value a = exp(x);
    a->setName("a");
    Value b = relu(a);
    b->setName("b");
    g.output(b);
    g.output(b * 2.0);
    FusionLog log = fuse(g, true);
    CHECK(reasonOf(log, "%a", "%b") ==
          "fused: element by element over the same shape f32[1024]; %a stays in registers "
          "(saves writing and reading 8.19 KB)");
  }
  {
    Graph g("broadcast");
    Value x = g.input("x", f32, {64, 256}), v = g.input("v", f32, {256});
    Value t = relu(v);
    t->setName("t");
    Value y = x * t;
    y->setName("y");
    g.output(y);
    FusionLog log = fuse(g, true);
    CHECK(g.kernelNames().size() == 1);
    CHECK(reasonOf(log, "%t", "%y").find("fused: %y broadcasts %t into its shape f32[64, 256]") ==
          0);
  }
}
