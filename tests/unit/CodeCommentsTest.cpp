// Generated code traced back to the graph: each statement carries the `.kf` text of the op
// it implements as a comment (issue 18), printed as the printer prints the node, and made
// safe whatever the node names hold.
#include "codegen/CudaCodegen.h"
#include "codegen/LineComment.h"
#include "compiler/Nvrtc.h"
#include "ir/Builder.h"
#include "ir/KernelRegion.h"
#include "ir/Printer.h"
#include "passes/Fusion.h"
#include "unit/TestTiming.h"

#include <catch2/catch.hpp>
#include <ctime>
#include <fmt/format.h>
#include <sstream>

using namespace kfuse;
using namespace kfuse::codegen;

/// The lines of `src` that hold `needle`.
static std::vector<std::string> linesWith(const std::string &src, const std::string &needle) {
  std::vector<std::string> out;
  std::istringstream in(src);
  for (std::string line; std::getline(in, line);)
    if (line.find(needle) != std::string::npos)
      out.push_back(line);
  return out;
}

/// Every `  // ` comment that ends a statement in `src`: the text after it.
static std::vector<std::string> trailingComments(const std::string &src) {
  std::vector<std::string> out;
  for (const std::string &line : linesWith(src, ";  // "))
    out.push_back(line.substr(line.find(";  // ") + 6));
  return out;
}

TEST_CASE("commentText keeps printable text and escapes what could end or continue it",
          "[codegen][comments]") {
  CHECK(commentText("%hb = add %h, %b") == "%hb = add %h, %b");
  CHECK(lineComment("%y = relu %x") == "  // %y = relu %x");
  CHECK(lineComment("") == ""); // a spec built by hand has no text: no comment
  CHECK(commentText("a\nb\rc\td") == "a\\x0ab\\x0dc\\x09d");
  CHECK(commentText("x */ y /* z") == "x \\x2a/ y /* z");
  // A backslash last on a line would splice the next line (the code) into the comment.
  CHECK(commentText("end\\") == "end\\x5c");
  CHECK(commentText("?\?/") == "\\x3f?/"); // the trigraph of a backslash
  CHECK(commentText("\xC3\xA9") == "\\xc3\\xa9");
  CHECK(commentText(std::string("nul\0x", 5)) == "nul\\x00x");
}

TEST_CASE("commentText caps the text at kCommentCap, reading no more of it than that",
          "[codegen][comments]") {
  std::string fits(kCommentCap, 'a');
  CHECK(commentText(fits) == fits);
  std::string cut = commentText(fits + "b");
  CHECK(cut.size() == kCommentCap);
  CHECK(cut == std::string(kCommentCap - 3, 'a') + "...");
  // Escapes are never cut in half, and a cut never leaves a backslash last.
  for (size_t pad = 0; pad < 8; ++pad) {
    std::string c = commentText(std::string(pad, 'a') + std::string(200, '\\'));
    CHECK(c.size() <= kCommentCap);
    CHECK(c.substr(c.size() - 3) == "...");
    CHECK((c.size() - pad - 3) % 4 == 0);
  }
  std::clock_t start = std::clock();
  CHECK(commentText(std::string(100'000'000, 'x')).size() == kCommentCap);
  CHECK(double(std::clock() - start) / CLOCKS_PER_SEC < 0.5 * test::kTimeSlack);
}

TEST_CASE("NodePrinter prints one node as printGraph prints it, unnamed nodes numbered",
          "[codegen][comments]") {
  Graph g("p");
  Value x = g.input("x", f32, {4});
  Value s = relu(x * 2.0); // unnamed: printed %0, %1
  Value c = cast(s, bf16);
  c->setName("c");
  g.output(c);
  std::string text = printGraph(g);
  NodePrinter print(g);
  CHECK(print(*x.node()) == "%x = input f32[4]");
  CHECK(print(*c.node()) == "%c = cast %1, to=bf16");
  for (const Node *n : g.nodes())
    CHECK(text.find("  " + print(*n) + (n->isInput() ? "\n" : "  # ")) != std::string::npos);
  CHECK(print.name(s.node()) == "1");
}

static std::unique_ptr<Graph> fusedChain() {
  auto g = std::make_unique<Graph>("chain");
  Value x = g->input("x", bf16, {64, 4096});
  Value b = g->input("b", bf16, {4096});
  Value hb = x + b;
  hb->setName("hb");
  Value y = gelu_tanh(hb);
  y->setName("y");
  Value z = cast(y * 0.5, f32); // the mul unnamed: %0
  z->setName("z");
  g->output(y);
  g->output(z);
  fuseGraph(*g);
  return g;
}

TEST_CASE("a fused kernel's statements carry each op's .kf text, in op order",
          "[codegen][comments]") {
  auto g = fusedChain();
  std::vector<KernelSpec> specs = buildKernelSpecs(*g);
  REQUIRE(specs.size() == 1);
  const KernelSpec &k = specs[0];
  REQUIRE(k.ops.size() == 4);
  CHECK(k.ops[0].text == "%hb = add %x, %b");
  CHECK(k.ops[3].text == "%z = cast %0, to=f32");
  std::string src = emitProgram(specs);
  // Inputs as loaded, then every op in order, then the stores naming what they write.
  std::vector<std::string> expected = {"%x", "%b"};
  for (const SpecOp &op : k.ops)
    expected.push_back(op.text);
  expected.push_back("output %y");
  expected.push_back("output %z");
  CHECK(trailingComments(src) == expected);
  for (const SpecOp &op : k.ops) { // on the statement that computes it
    std::vector<std::string> lines = linesWith(src, "  // " + op.text);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("const float t") != std::string::npos);
  }
}

TEST_CASE("a GEMM kernel names its matmul at the template call and in the epilogue",
          "[codegen][comments][gemm]") {
  auto g = std::make_unique<Graph>("mlp");
  Value x = g->input("x", bf16, {64, 4096});
  Value w = g->input("w", bf16, {11008, 4096});
  Value h = matmul(x, w, {.transB = true});
  h->setName("h");
  Value y = relu(h);
  y->setName("y");
  g->output(y);
  fuseGraph(*g);
  for (Target t : {targetFor(90, 132), targetFor(80, 108)}) {
    std::string src = emitProgram(buildKernelSpecs(*g, t));
    REQUIRE(!linesWith(src, "kf_gemm_").empty());
    CHECK(linesWith(src, ";  // %h = matmul %x, %w, trans_b=true").size() == 1);
    CHECK(linesWith(src, "// acc: %h = matmul %x, %w, trans_b=true").size() == 1);
    CHECK(linesWith(src, "const float t0 = kf_relu(acc);  // %y = relu %h").size() == 1);
    CHECK(linesWith(src, "  // output %y").size() >= 1);
  }
}

TEST_CASE("hostile node names: comments stay comments, capped, and NVRTC compiles",
          "[codegen][comments][nvrtc]") {
  const std::string evil = "a\n}*/ #include <nope> ?\?/\\\n" + std::string(500, 'n') + "\\";
  Graph g("evil");
  Value x = g.input(evil, f32, {10});
  Value y = exp(x);
  y->setName(evil);
  Value z = y * 3.0;
  z->setName("z\\");
  g.output(z);
  fuseGraph(g);
  std::vector<KernelSpec> specs = buildKernelSpecs(g);
  REQUIRE(specs.size() == 1);
  // The printer's names are already words of the .kf lexer; a text from elsewhere (or a
  // future printer) must be made safe by the emitter alone, so try the raw name too.
  // The exp's ends in a backslash: were it left last on its line, the next line (the mul)
  // would be part of the comment and the program would not compile.
  specs[0].ops[0].text = "exp\n*/ \\";
  specs[0].ops[1].text = evil;
  std::string src = emitProgram(specs);
  std::vector<std::string> comments = trailingComments(src);
  REQUIRE(comments.size() == 4); // %x, exp, mul, output
  for (const std::string &c : comments) {
    CHECK(c.size() <= kCommentCap);
    CHECK(c.back() != '\\');
    CHECK(c.find("*/") == std::string::npos);
  }
  CHECK(comments[1] == "exp\\x0a\\x2a/ \\x5c");
  CHECK(comments[2].substr(0, 5) == "a\\x0a");
  CHECK(comments[2].substr(comments[2].size() - 3) == "...");
  CHECK(linesWith(src, "#include <nope>").size() == 1); // only inside the comment
  compiler::CompiledProgram p = compiler::nvrtcCompile(src, "sm_90", true);
  CHECK(p.ptx.find(".entry " + specs[0].mangled) != std::string::npos);
  CHECK(p.ptx.find("ex2.approx") != std::string::npos); // the exp after the comment is code
}

TEST_CASE("10^5 ops with long names: specs and source in near-linear time, comments capped",
          "[codegen][comments][perf]") {
  Graph g("long");
  Value v = g.input("x", f32, {16});
  const std::string pad(200, 'q');
  for (int i = 0; i < 100000; ++i) {
    v = i % 2 ? v + 1.0 : relu(v);
    v->setName(fmt::format("{}{}", pad, i));
  }
  g.output(v);
  // Kernels of kMaxRegionOps ops each (the most one kernel may hold): 50 of them.
  int k = -1, inKernel = 0;
  for (Node *n : g.nodes())
    if (!n->isInput()) {
      if (k < 0 || inKernel == int(kMaxRegionOps)) {
        k = g.addKernel(fmt::format("k{}", g.kernelNames().size()));
        inKernel = 0;
      }
      n->setKernel(k);
      ++inKernel;
    }
  REQUIRE(g.kernelNames().size() == 50);
  std::clock_t start = std::clock();
  std::vector<KernelSpec> specs = buildKernelSpecs(g);
  std::string src = emitProgram(specs);
  double seconds = double(std::clock() - start) / CLOCKS_PER_SEC;
  WARN("10^5 ops with 200-character names: specs + source took " << seconds << " s of CPU");
  CHECK(seconds < 5.0 * test::kTimeSlack);
  std::vector<std::string> comments = trailingComments(src);
  CHECK(comments.size() == 100000 + 2 * 50); // each op, each kernel's input and output
  size_t longest = 0;
  for (const std::string &c : comments)
    longest = std::max(longest, c.size());
  CHECK(longest == kCommentCap);
}
