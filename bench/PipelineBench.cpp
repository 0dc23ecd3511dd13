// How the compiler's own time grows with graph size: random DAGs of 10^3 .. 10^6 ops
// (elementwise with broadcasts, several consumers, a matmul every ~64 ops), timed through
// print, parse, verify and each pass of -O2. Near-linear growth shows as a flat us/op column.
// Then two adversarial shapes, 10^4 .. MAX_OPS: one long chain that fuses into a single
// kernel, and one input read by half of all ops (wide fan-out, summed by an add chain).
//   usage: PipelineBench [MAX_OPS]   (default 1000000)
#include "ir/Builder.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/PassManager.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

using namespace kfuse;
using Clock = std::chrono::steady_clock;

static double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

static std::unique_ptr<Graph> makeGraph(int64_t numOps, uint64_t seed) {
  auto g = std::make_unique<Graph>("bench");
  std::mt19937_64 rng(seed);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  std::vector<Value> rows, mats;
  rows.push_back(g->input("x", f32, {64, 256}));
  rows.push_back(g->input("bias", f32, {256}));
  mats.push_back(g->input("w", f32, {256, 256}));
  const OpKind unary[] = {OpKind::Relu, OpKind::Tanh, OpKind::Sigmoid,
                          OpKind::Neg,  OpKind::Exp,  OpKind::Silu};
  const OpKind binary[] = {OpKind::Add, OpKind::Mul, OpKind::Sub, OpKind::Max};
  for (int64_t i = 0; i < numOps; ++i) {
    // Mostly chains on recent values, sometimes reaching further back (several consumers).
    size_t window = std::min<size_t>(rows.size(), pick(8) == 0 ? 64 : 4);
    Value a = rows[rows.size() - 1 - pick(window)];
    Value r = a;
    int choice = static_cast<int>(pick(64));
    if (choice == 0) {
      Value full = a->shape().size() == 2 ? a : a + rows[0];
      r = matmul(full, mats[0]);
    } else if (choice < 30) {
      r = g->unary(unary[pick(std::size(unary))], a);
    } else if (choice < 40) {
      r = g->binary(binary[pick(std::size(binary))], a.node(), Operand::literal(1.5));
    } else {
      Value b = rows[rows.size() - 1 - pick(std::min<size_t>(rows.size(), 16))];
      r = g->binary(binary[pick(std::size(binary))], a.node(), b.node());
    }
    rows.push_back(r);
  }
  g->output(rows.back());
  g->output(rows[rows.size() / 2]);
  return g;
}

// add/relu alternating on one f32[16] value: -O2 fuses all of it into one kernel.
static std::unique_ptr<Graph> makeChain(int64_t numOps) {
  auto g = std::make_unique<Graph>("chain");
  Value v = g->input("x", f32, {16});
  for (int64_t i = 1; i <= numOps; ++i)
    v = i % 2 ? g->binary(OpKind::Add, v.node(), Operand::literal(1.0)) : relu(v);
  g->output(v);
  return g;
}

// x is read by numOps/2 distinct muls (distinct constants: cse keeps them), summed in a chain.
static std::unique_ptr<Graph> makeFan(int64_t numOps) {
  auto g = std::make_unique<Graph>("fan");
  Value x = g->input("x", f32, {16});
  Value s = relu(x);
  for (int64_t i = 1; i < numOps / 2; ++i)
    s = s + g->binary(OpKind::Mul, x.node(), Operand::literal(0.5 + static_cast<double>(i)));
  g->output(s);
  return g;
}

static void measure(const char *shape, int64_t n, std::unique_ptr<Graph> (*make)(int64_t)) {
  auto t = Clock::now();
  auto g = make(n);
  double build = since(t);
  t = Clock::now();
  std::string text = printGraph(*g);
  double print = since(t);
  t = Clock::now();
  auto parsed = parseModule(text, "bench.kf");
  double parse = since(t);
  t = Clock::now();
  verify(*parsed[0]);
  double verifyS = since(t);
  PassManager pm;
  pm.addPipeline(defaultPipeline());
  pm.run(*parsed[0]);
  double passes[4] = {0, 0, 0, 0}, total = print + parse + verifyS;
  for (size_t i = 0; i < pm.records().size() && i < 4; ++i) {
    passes[i] = pm.records()[i].seconds;
    total += passes[i];
  }
  verify(*parsed[0]);
  std::printf("%-6s %9lld %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.2f %8zu\n", shape,
              static_cast<long long>(g->numNodes()), build, print, parse, verifyS, passes[0],
              passes[1], passes[2], passes[3], total / static_cast<double>(n) * 1e6,
              parsed[0]->kernelNames().size());
  std::fflush(stdout);
}

static std::unique_ptr<Graph> makeRandom(int64_t n) { return makeGraph(n, 42); }

int main(int argc, char **argv) {
  int64_t maxOps = argc > 1 ? std::atoll(argv[1]) : 1000000;
  std::printf("%-6s %9s %9s %9s %9s %9s %9s %9s %9s %9s %9s %8s\n", "shape", "nodes", "build_s",
              "print_s", "parse_s", "verify_s", "simplify", "cse", "dce", "fuse", "us/op",
              "kernels");
  for (int64_t n = 1000; n <= maxOps; n *= 10)
    measure("random", n, makeRandom);
  for (int64_t n = 10000; n <= maxOps; n *= 10)
    measure("chain", n, makeChain);
  for (int64_t n = 10000; n <= maxOps; n *= 10)
    measure("fan", n, makeFan);
}
