// Pass manager, simplify, cse and dce through the builder API; every test ends in verify().
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Verifier.h"
#include "passes/PassManager.h"

#include <catch2/catch.hpp>

using namespace kfuse;

static bool runPass(Graph &g, const char *name) {
  auto p = createPass(name);
  bool changed = p->run(g);
  verify(g);
  return changed;
}

static size_t countKind(const Graph &g, OpKind k) {
  size_t c = 0;
  for (const Node *n : g.nodes())
    c += n->kind() == k;
  return c;
}

TEST_CASE("pipelines: names, levels and unknown passes", "[passes]") {
  CHECK(parsePipeline("-O2") == std::vector<std::string>{"simplify", "cse", "dce", "fuse"});
  CHECK(parsePipeline("-O0").empty());
  CHECK(parsePipeline("cse, dce") == std::vector<std::string>{"cse", "dce"});
  CHECK(knownPasses().size() == 4);
  REQUIRE_THROWS_WITH(parsePipeline("simplify,cfold"),
                      "unknown pass 'cfold'; known passes: simplify, cse, dce, fuse");
  REQUIRE_THROWS_WITH(createPass("x"), Catch::Contains("known passes: simplify"));
  REQUIRE_THROWS_WITH(parsePipeline("-O7"), Catch::Contains("-O0 or -O2"));
}

TEST_CASE("pass manager prints after passes, marks unchanged ones and verifies", "[passes]") {
  Graph g("pm");
  auto x = g.input("x", f32, {8});
  g.output(x * 2.0 * 3.0);
  PassManagerOptions o;
  o.printAfterAll = true;
  o.verifyEach = true;
  o.timePasses = true;
  o.printer = [](const Graph &gr) { return std::to_string(gr.numNodes()) + " nodes\n"; };
  PassManager pm(o);
  pm.addPipeline({"simplify", "cse", "dce"});
  std::string log;
  CHECK(pm.run(g, &log));
  CHECK(log.find("IR after simplify //") != std::string::npos);
  CHECK(log.find("2 nodes") != std::string::npos);
  CHECK(log.find("IR after cse (unchanged)") != std::string::npos);
  CHECK(log.find("pass timing") != std::string::npos);
  REQUIRE(pm.records().size() == 3);
  CHECK(pm.records()[0].changed);
  CHECK(!pm.records()[1].changed);
  verify(g);

  PassManagerOptions bad;
  bad.printAfter = {"nope"};
  REQUIRE_THROWS_WITH(PassManager(bad), Catch::Contains("unknown pass 'nope'"));
}

TEST_CASE("simplify folds scalar chains with the literal on either side", "[simplify]") {
  Graph g;
  auto x = g.input("x", f32, {1000});
  auto y = 3.0 * (x * 2.0);
  auto z = (y + 1.0) + 4.0;
  g.output(z);
  CHECK(runPass(g, "simplify"));
  REQUIRE(g.numNodes() == 3);
  Node *add = g.outputs()[0];
  CHECK(add->kind() == OpKind::Add);
  CHECK(add->operand(1).scalar == 5.0);
  Node *mul = add->operand(0).node;
  CHECK(mul->kind() == OpKind::Mul);
  CHECK(mul->operand(0).node == x.node());
  CHECK(mul->operand(1).scalar == 6.0);
  CHECK(!runPass(g, "simplify"));
}

TEST_CASE("simplify keeps intermediates that are outputs or have several uses", "[simplify]") {
  Graph g;
  auto x = g.input("x", f32, {4});
  auto a = x * 2.0;
  auto b = a * 3.0;
  g.output(a);
  g.output(b);
  CHECK(!runPass(g, "simplify"));
  Graph h;
  auto y = h.input("y", f32, {4});
  auto c = y * 2.0;
  h.output(c * 3.0);
  h.output(c + 1.0);
  CHECK(!runPass(h, "simplify"));
  CHECK(h.numNodes() == 4);
}

TEST_CASE("simplify removes identities but never x*0", "[simplify]") {
  Graph g;
  auto x = g.input("x", f32, {4});
  auto h = g.input("h", f16, {4});
  auto a = ((((x * 1.0) + -0.0) - 0.0) / 1.0);
  auto b = 1.0 * (-0.0 + cast(a, f32));
  g.output(exp(b));
  g.output(x * 0.0);
  g.output(0.0 - x); // not an identity
  g.output(1.0 / x); // not an identity
  g.output(cast(cast(h, f16), f32));
  CHECK(runPass(g, "simplify"));
  CHECK(g.outputs()[0]->kind() == OpKind::Exp);
  CHECK(g.outputs()[0]->operand(0).node == x.node());
  CHECK(g.outputs()[1]->kind() == OpKind::Mul);
  CHECK(g.outputs()[2]->kind() == OpKind::Sub);
  CHECK(g.outputs()[3]->kind() == OpKind::Div);
  CHECK(g.outputs()[4]->kind() == OpKind::Cast);
  CHECK(g.outputs()[4]->operand(0).node == h.node());
  CHECK(countKind(g, OpKind::Add) == 0);
}

TEST_CASE("simplify keeps x + 0.0 and x - (-0.0): they turn -0 into +0", "[simplify]") {
  Graph g;
  auto x = g.input("x", f32, {4});
  g.output(x + 0.0);
  g.output(0.0 + x);
  g.output(x - -0.0);
  CHECK_FALSE(runPass(g, "simplify"));
  CHECK(g.outputs()[0]->kind() == OpKind::Add);
  CHECK(g.outputs()[1]->kind() == OpKind::Add);
  CHECK(g.outputs()[2]->kind() == OpKind::Sub);
}

TEST_CASE("simplify folds x*0.5*2 to x and refuses overflowing folds", "[simplify]") {
  Graph g;
  auto x = g.input("x", f32, {4});
  g.output(exp(x * 0.5 * 2.0));
  g.output(x * 1e30 * 1e30);
  CHECK(runPass(g, "simplify"));
  CHECK(g.outputs()[0]->operand(0).node == x.node());
  CHECK(g.outputs()[1]->operand(0).node->kind() == OpKind::Mul); // not folded to 1e60
}

TEST_CASE("cse merges equal nodes, commutes add/mul and compares literal bits", "[cse]") {
  Graph g;
  auto x = g.input("x", f32, {4});
  auto y = g.input("y", f32, {4});
  auto a = x + y, b = y + x, c = x - y, d = y - x;
  auto e = x * 0.0, f = x * -0.0;
  auto m1 = relu(a), m2 = relu(b);
  g.output(m1);
  g.output(m2);
  g.output(c);
  g.output(d);
  g.output(e);
  g.output(f);
  CHECK(runPass(g, "cse"));
  CHECK(g.outputs()[0] == g.outputs()[1]);
  CHECK(g.outputs()[2] != g.outputs()[3]);
  CHECK(g.outputs()[4] != g.outputs()[5]);
  CHECK(g.outputs().size() == 6);
  CHECK(countKind(g, OpKind::Relu) == 1);
  CHECK(countKind(g, OpKind::Add) == 1);
  CHECK(!runPass(g, "cse"));
}

TEST_CASE("cse tells matmul attrs and cast targets apart", "[cse]") {
  Graph g;
  auto a = g.input("a", f32, {8, 8});
  g.output(matmul(a, a));
  g.output(matmul(a, a, {.transB = true}));
  g.output(matmul(a, a));
  g.output(cast(a, f16));
  g.output(cast(a, bf16));
  CHECK(runPass(g, "cse"));
  CHECK(countKind(g, OpKind::MatMul) == 2);
  CHECK(countKind(g, OpKind::Cast) == 2);
  CHECK(g.outputs()[0] == g.outputs()[2]);
}

TEST_CASE("cse keys on every attribute, not a list of known ones", "[cse][attrs]") {
  // For each op and each attribute with a default: a node at the default and one with any
  // other value of the attribute's type are two tensors. Square f32 operands fit every op
  // that takes attributes today; an op whose other value does not type-check is skipped.
  const OpKind all[] = {
#define KF_OP(E, name, arity, cls) OpKind::E,
#include "ir/Ops.def"
  };
  const AttrValue others[] = {true, int64_t(2), IntList{0}, DType::F16};
  size_t tried = 0;
  for (OpKind k : all) {
    for (const OpAttr &d : opAttrs(k)) {
      if (d.required())
        continue;
      INFO(opName(k) << " " << attrName(d.attr));
      Graph g;
      auto a = g.input("a", f32, {8, 8});
      llvm::SmallVector<Operand, 2> ops(opArity(k), Operand(a));
      // Required attributes (a reduction's axes) take the first value of their type.
      Attrs base;
      for (const OpAttr &r : opAttrs(k))
        if (r.required())
          for (const AttrValue &v : others)
            if (v.type() == attrType(r.attr)) {
              base.set(r.attr, v);
              break;
            }
      Attrs other = base;
      for (const AttrValue &v : others)
        if (v.type() == attrType(d.attr) && !(v == d.defaultValue))
          other.set(d.attr, v);
      if (!other.find(d.attr))
        other.set(d.attr, false); // a bool attribute that defaults to true
      Node *first = g.create(k, ops, base);
      Node *second;
      try {
        second = g.create(k, ops, other);
      } catch (const Error &) {
        continue;
      }
      g.output(first);
      g.output(second);
      CHECK(!runPass(g, "cse"));
      CHECK(g.outputs()[0] != g.outputs()[1]);
      ++tried;
    }
  }
  CHECK(tried >= 6); // matmul's trans_a and trans_b, the reductions' keepdims
}

TEST_CASE("cse keeps two matmuls that differ only in trans_a", "[cse][attrs]") {
  Graph g;
  auto a = g.input("a", f32, {8, 8});
  Attrs ta;
  ta.set(Attr::TransA, true);
  g.output(g.create(OpKind::MatMul, {Operand(a), Operand(a)}));
  g.output(g.create(OpKind::MatMul, {Operand(a), Operand(a)}, ta));
  g.output(g.create(OpKind::MatMul, {Operand(a), Operand(a)}, ta));
  CHECK(runPass(g, "cse"));
  CHECK(countKind(g, OpKind::MatMul) == 2);
  CHECK(g.outputs()[0] != g.outputs()[1]);
  CHECK(g.outputs()[1] == g.outputs()[2]);
}

TEST_CASE("dce removes dead chains, keeps inputs and outputs", "[dce]") {
  Graph g;
  auto x = g.input("x", f32, {4});
  auto unused = g.input("unused", f32, {4});
  auto dead = exp(relu(x));
  (void)dead;
  auto live = x + 1.0;
  g.output(live);
  CHECK(g.numNodes() == 5);
  CHECK(runPass(g, "dce"));
  CHECK(g.numNodes() == 3);
  CHECK(g.inputs().size() == 2);
  CHECK(unused->kind() == OpKind::Input);
  CHECK(!runPass(g, "dce"));
}

TEST_CASE("simplify, cse and dce are linear: 10^6 nodes", "[passes][perf]") {
  Graph g;
  auto x = g.input("x", f32, {16});
  Value v = x;
  for (int i = 0; i < 250000; ++i) {
    Value a = v * 2.0, b = v * 2.0;
    v = (a + b) * 1.0;
  }
  g.output(v);
  PassManager pm;
  pm.addPipeline({"simplify", "cse", "dce"});
  CHECK(pm.run(g));
  CHECK(g.numNodes() == 1 + 2 * 250000);
  verify(g);
}
