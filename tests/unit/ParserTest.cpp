// The textual IR through its C++ interface: print -> parse -> print is the identity, names
// and literals survive, every malformed input gives one positioned error, and a 200,000-op
// chain parses, verifies and prints in well under a second.
#include "ir/Parser.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "unit/TestTiming.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <ctime>
#include <limits>

using namespace kfuse;

namespace {
std::string roundTrip(const std::string &text) {
  auto graphs = parseModule(text, "t.kf");
  std::vector<const Graph *> view;
  for (auto &g : graphs)
    view.push_back(g.get());
  return printModule(view);
}

/// The diagnostic of parsing `text`, or "" if it parses.
std::string errorOf(const std::string &text) {
  try {
    parseModule(text, "bad.kf");
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}
} // namespace

TEST_CASE("printer writes the .kf form with types as comments", "[printer]") {
  Graph g("mlp");
  auto x = g.input("x", bf16, {64, 4096});
  auto w = g.input("w", bf16, {11008, 4096});
  auto b = g.input("b", bf16, {11008});
  auto y = gelu_tanh(matmul(x, w, {.transB = true}) + b);
  g.output(y);
  g.output(cast(y, f32));
  CHECK(printGraph(g) == "graph mlp {\n"
                         "  %x = input bf16[64, 4096]\n"
                         "  %w = input bf16[11008, 4096]\n"
                         "  %b = input bf16[11008]\n"
                         "  %0 = matmul %x, %w, trans_b=true  # bf16[64, 11008]\n"
                         "  %1 = add %0, %b  # bf16[64, 11008]\n"
                         "  %2 = gelu_tanh %1  # bf16[64, 11008]\n"
                         "  %3 = cast %2, to=f32  # f32[64, 11008]\n"
                         "  output %2, %3\n"
                         "}\n");
}

TEST_CASE("generated names skip names already in use", "[printer]") {
  Graph g("g");
  auto x = g.input("1", f32, {4});
  auto a = x * 2.0; // unnamed: %0
  auto b = relu(a); // named "0": keeps it, so a cannot be %0
  b->setName("0");
  auto c = b + 1.0; // unnamed
  auto d = exp(c);
  d->setName("bad name!"); // invalid characters are replaced
  g.output(d);
  std::string text = printGraph(g);
  CHECK(text == "graph g {\n"
                "  %1 = input f32[4]\n"
                "  %2 = mul %1, 2.0  # f32[4]\n"
                "  %0 = relu %2  # f32[4]\n"
                "  %3 = add %0, 1.0  # f32[4]\n"
                "  %bad_name_ = exp %3  # f32[4]\n"
                "  output %bad_name_\n"
                "}\n");
  CHECK(roundTrip(text) == text);
}

TEST_CASE("parsing builds the same graph the builder does", "[parser]") {
  auto g = parseGraph("graph seed_mul {\n"
                      "  %x = input f32[1000000000]\n"
                      "  %a = mul %x, 2.0\n"
                      "  %b = mul %a, 3.0\n"
                      "  output %b\n"
                      "}\n");
  verify(*g);
  REQUIRE(g->numNodes() == 3);
  CHECK(g->name() == "seed_mul");
  REQUIRE(g->inputs().size() == 1);
  CHECK(g->inputs()[0]->type().str() == "f32[1000000000]");
  REQUIRE(g->outputs().size() == 1);
  const Node *b = g->outputs()[0];
  CHECK(b->name() == "b");
  CHECK(b->kind() == OpKind::Mul);
  CHECK(b->operand(1).isScalar());
  CHECK(b->operand(1).scalar == 3.0);
  CHECK(b->operand(0).node->name() == "a");
  CHECK(b->operand(0).node->operand(0).node == g->inputs()[0]);
}

TEST_CASE("attributes and kernel regions parse into the graph", "[parser]") {
  auto g = parseGraph("graph g {\n"
                      "  %x = input f16[2, 8, 4]\n"
                      "  %w = input f16[16, 8]\n"
                      "  %m = matmul %x, %w, trans_a=true, trans_b=true\n"
                      "  kernel epi {\n"
                      "    %r = relu %m\n"
                      "    %c = cast %r, to=bf16\n"
                      "  }\n"
                      "  output %c\n"
                      "}\n");
  const Node *c = g->outputs()[0];
  const Node *r = c->operand(0).node;
  const Node *m = r->operand(0).node;
  CHECK(m->matmulAttrs().transA);
  CHECK(m->matmulAttrs().transB);
  CHECK(m->type().str() == "f16[2, 4, 16]");
  CHECK(c->type().str() == "bf16[2, 4, 16]");
  REQUIRE(g->kernelNames().size() == 1);
  CHECK(g->kernelNames()[0] == "epi");
  CHECK(m->kernel() == -1);
  CHECK(r->kernel() == 0);
  CHECK(c->kernel() == 0);
}

TEST_CASE("literals round-trip to the same double", "[parser][printer]") {
  CHECK(formatLiteral(2.0) == "2.0");
  CHECK(formatLiteral(-1.5e-3) == "-0.0015");
  CHECK(formatLiteral(0.1) == "0.1");
  CHECK(formatLiteral(-0.0) == "-0.0");
  CHECK(formatLiteral(1e20) == "1e+20");
  CHECK(formatLiteral(std::numeric_limits<double>::infinity()) == "inf");
  CHECK(formatLiteral(-std::numeric_limits<double>::infinity()) == "-inf");
  CHECK(formatLiteral(std::nan("")) == "nan");
  for (double v : {0.1, 1.0 / 3.0, -2.5e-30, 3.4028234663852886e38, 1e-45, 65504.0}) {
    Graph g("g");
    g.output(g.input("x", f32, {1}) * v);
    auto back = parseGraph(printGraph(g));
    CHECK(back->outputs()[0]->operand(1).scalar == v);
  }
  auto g = parseGraph("graph g {\n  %x = input f32[1]\n  %y = add %x, nan\n  output %y\n}\n");
  CHECK(std::isnan(g->outputs()[0]->operand(1).scalar));
}

TEST_CASE("a module prints graphs separated by a blank line", "[printer]") {
  std::string text = "graph a {\n  %x = input f32[]\n  output %x\n}\n\n"
                     "graph b {\n  %y = input f16[3]\n  %z = abs %y  # f16[3]\n  output %z\n}\n";
  CHECK(roundTrip(text) == text);
  CHECK(parseModule(text, "m.kf").size() == 2);
}

TEST_CASE("parse errors give file:line:col, the line and a caret", "[parser]") {
  CHECK(errorOf("graph g {\n  %x = input f32[8]\n  %abcdef = foo %x\n  output %x\n}\n") ==
        "bad.kf:3:13: error: unknown op 'foo'\n  %abcdef = foo %x\n            ^");
  CHECK(errorOf("") == "bad.kf:1:1: error: no graph in file");
  CHECK(errorOf(std::string("graph g {\0}", 11)) ==
        "bad.kf:1:10: error: file is not text (a NUL byte)\ngraph g {\\x00}\n         ^");
  CHECK(errorOf("graph g {\n  %x = input f32[8]\n  %y = add %x, %x\n") ==
        "bad.kf:4:1: error: expected '}' to close graph 'g' (opened at line 1)");
  // A builder error is re-thrown at the op.
  CHECK(errorOf("graph g {\n  %a = input f32[3, 4]\n  %b = input f32[5]\n  %y = mul %a, %b\n"
                "  output %y\n}\n") ==
        "bad.kf:4:8: error: mul: shapes [3, 4] and [5] do not broadcast (dim 1: 4 vs 5)\n"
        "  %y = mul %a, %b\n       ^");
  // Columns count characters, not bytes; tabs are kept in the caret line.
  CHECK(errorOf("graph g {\n\t%x = input f32[8]\n\t%y = relu é\n}\n") ==
        "bad.kf:3:12: error: expected an operand (%name or number) or an attribute "
        "(name=value), got 'é'\n\t%y = relu é\n\t          ^");
  CHECK(errorOf("graph g {\n  # é\xff\n}\n") ==
        "bad.kf:2:6: error: file is not text (invalid UTF-8)\n  # é\\xff\n     ^");
}

TEST_CASE("errors are ParseErrors that carry their position", "[parser]") {
  try {
    parseModule("graph g {\n  %x = input f32[8]\n  %y = relu %x, %x\n  output %y\n}\n", "p.kf");
    FAIL("no error");
  } catch (const ParseError &e) {
    CHECK(e.file == "p.kf");
    CHECK(e.line == 3);
    CHECK(e.column == 8);
    CHECK(e.message == "'relu' expects 1 operand, got 2");
  }
  REQUIRE_THROWS_WITH(parseFile("/nonexistent/x.kf"),
                      "cannot open '/nonexistent/x.kf': No such file or directory");
}

TEST_CASE("every example graph parses and round-trips", "[parser][examples]") {
  for (const char *name :
       {"double", "seed_mul", "matmul_bias_relu", "decode", "mlp", "gelu_bias", "diamond"}) {
    INFO(name);
    auto graphs = parseFile(std::string(KFUSE_SOURCE_DIR) + "/examples/graphs/" + name + ".kf");
    REQUIRE(graphs.size() == 1);
    CHECK(graphs[0]->name() == name);
    std::string once = printGraph(*graphs[0]);
    CHECK(roundTrip(once) == once);
  }
}

TEST_CASE("200,000-op chain parses, verifies and prints in well under a second", "[parser][perf]") {
  const int n = 200000;
  std::string text = "graph chain {\n  %v0 = input f32[16]\n";
  text.reserve(n * 32);
  for (int i = 1; i <= n; ++i)
    text += i % 2 ? fmt::format("  %v{} = add %v{}, 1.0\n", i, i - 1)
                  : fmt::format("  %v{} = relu %v{}\n", i, i - 1);
  text += fmt::format("  output %v{}\n}}\n", n);

  std::clock_t start = std::clock(); // CPU time: robust against a busy machine
  auto graphs = parseModule(text, "chain.kf");
  verify(*graphs[0]);
  std::string printed = printGraph(*graphs[0]);
  double seconds = double(std::clock() - start) / CLOCKS_PER_SEC;
  REQUIRE(graphs[0]->numNodes() == n + 1);
  CHECK(printed.size() > text.size()); // the type comments
  CHECK(printed.find("  %v200000 = relu %v199999  # f32[16]\n  output %v200000\n}\n") !=
        std::string::npos);
  WARN("200,000-op chain: parse + verify + print took " << seconds << " s of CPU");
  CHECK(seconds < 1.0 * test::kTimeSlack);
}

TEST_CASE("graph and kernel names the lexer cannot read are made readable", "[printer]") {
  Graph g("2 layers");
  auto x = g.input("x", f32, {4});
  auto y = relu(x);
  y->setName("y");
  y->setKernel(g.addKernel("0-fused"));
  g.output(y);
  std::string text = printGraph(g);
  CHECK(text == "graph _2_layers {\n"
                "  %x = input f32[4]\n"
                "  kernel _0_fused {\n"
                "    %y = relu %x  # f32[4]\n"
                "  }\n"
                "  output %y\n"
                "}\n");
  CHECK(roundTrip(text) == text);
}

TEST_CASE("CRLF line ends and a byte order mark are accepted", "[parser]") {
  auto g = parseGraph("\xEF\xBB\xBFgraph g {\r\n  %x = input f32[2]\r\n  output %x\r\n}\r\n");
  CHECK(g->name() == "g");
  CHECK(errorOf("graph g {\r\n  %x = inpt f32[2]\r\n}\r\n") ==
        "bad.kf:2:8: error: unknown op 'inpt'\n  %x = inpt f32[2]\n       ^");
}

TEST_CASE("a value may not be used in its own definition", "[parser]") {
  CHECK(errorOf("graph g {\n  %x = input f32[2]\n  %y = add %x, %y\n  output %y\n}\n") ==
        "bad.kf:3:16: error: use of undefined value '%y'\n  %y = add %x, %y\n               ^");
}

namespace {
/// Whether a message of an ASCII input is safe to print: printable ASCII, with '\n' between
/// its lines and the tabs the source line had.
bool asciiPrintable(const std::string &m) {
  return std::all_of(m.begin(), m.end(),
                     [](char c) { return (c >= 0x20 && c < 0x7f) || c == '\n' || c == '\t'; });
}
} // namespace

TEST_CASE("a 10 MB token or line gives a message under 2 KB that names line:col", "[parser]") {
  const std::string big(10'000'000, 'a');
  // An op name of 10^7 characters: quoted to its first 60, then its size.
  std::string m =
      errorOf("graph g {\n  %x = input f32[4]\n  %y = " + big + " %x\n  output %y\n}\n");
  REQUIRE(m.size() < 2048); // first: a failure must not print 10 MB
  CHECK(m == "bad.kf:3:8: error: unknown op '" + std::string(60, 'a') + "... (10000000 bytes)'\n" +
                 "  %y = " + std::string(60, 'a') + "...\n       ^");
  // A definition named with 10^7 characters: the error is past the name, and the line is
  // shown as the 60 characters either side of the caret.
  m = errorOf("graph g {\n  %" + big + " = relu\n  output %x\n}\n");
  REQUIRE(m.size() < 2048);
  CHECK(m == "bad.kf:2:10000007: error: 'relu' expects 1 operand, got 0\n..." +
                 std::string(57, 'a') + " = relu\n" + std::string(63, ' ') + "^");
  // A 10 MB line: spaces before a stray character at its end.
  m = errorOf("graph g {\n  %x = input f32[4]\n  output %x" + std::string(10'000'000, ' ') +
              "@\n}\n");
  REQUIRE(m.size() < 2048);
  CHECK(m == "bad.kf:3:10000012: error: expected end of line after the outputs, got '@'\n..." +
                 std::string(60, ' ') + "@\n" + std::string(63, ' ') + "^");
  // A graph name of 10^7 characters in a verifier error the parser passes on.
  m = errorOf("graph " + big +
              " {\n  %x = input f32[4, 4]\n  kernel k {\n    %y = matmul %x, %x\n" +
              "    %z = matmul %y, %y\n  }\n  output %z\n}\n");
  REQUIRE(m.size() < 2048);
  CHECK(m.rfind("bad.kf:1:1: error: verifier: graph '" + std::string(200, 'a') +
                    "... (10000000 bytes)': kernel 'k' cannot be one kernel",
                0) == 0);
}

TEST_CASE("control bytes and invalid UTF-8 reach a message only as \\xNN", "[parser]") {
  // ESC would recolour the terminal: the stray character is quoted, and the line shown,
  // escaped; the caret counts each escape as the 4 characters it shows as.
  std::string m = errorOf("graph g {\n  %x = input f32[4]\n  %y = relu \x01\x1b[31m %x\n}\n");
  REQUIRE(m.size() < 2048);
  CHECK(asciiPrintable(m));
  CHECK(m == "bad.kf:3:13: error: expected an operand (%name or number) or an attribute "
             "(name=value), got '\\x01'\n  %y = relu \\x01\\x1b[31m %x\n            ^");
  // Invalid UTF-8 and NUL: the file is refused, and the line shows where.
  m = errorOf("graph g {\n  %x = input f32[4] \x7f\xff\xfe\x01 # \xc3(\n  output %x\n}\n");
  CHECK(asciiPrintable(m));
  CHECK(m == "bad.kf:2:22: error: file is not text (invalid UTF-8)\n"
             "  %x = input f32[4] \\x7f\\xff\\xfe\\x01 # \\xc3(\n"
             "                        ^");
  m = errorOf(std::string("graph g {\n  %x = input f32[4]") + '\0' + "\x1b]0;pwned\x07\n}\n");
  CHECK(asciiPrintable(m));
  CHECK(m == "bad.kf:2:20: error: file is not text (a NUL byte)\n"
             "  %x = input f32[4]\\x00\\x1b]0;pwned\\x07\n"
             "                   ^");
  // A 10 MB line of control bytes stays short too: the window shows 60 of them, escaped.
  m = errorOf("graph g {\n  %x = input f32[4]\n  %y = relu " + std::string(10'000'000, '\x01') +
              "\n}\n");
  REQUIRE(m.size() < 2048);
  CHECK(asciiPrintable(m));
  CHECK(m.rfind("bad.kf:3:13: error: expected an operand (%name or number) or an attribute "
                "(name=value), got '\\x01'\n",
                0) == 0);
}

TEST_CASE("excerpt and excerptLine bound and escape the input they quote", "[parser][excerpt]") {
  CHECK(excerpt("abc") == "abc");
  CHECK(excerpt(std::string(300, 'a')) == std::string(200, 'a') + "... (300 bytes)");
  CHECK(excerpt("\xc3\xa9\xc3\xa9", 1) == "\xc3\xa9... (4 bytes)"); // cut between characters
  CHECK(excerpt("a\tb\x1b\x7f") == "a\\x09b\\x1b\\x7f");
  CHECK(excerpt(std::string("\0", 1)) == "\\x00");
  CHECK(excerpt("\xff\xc3(") == "\\xff\\xc3(");                     // not UTF-8
  CHECK(excerpt("\xed\xa0\x80") == "\\xed\\xa0\\x80");              // a surrogate
  CHECK(excerpt("\xc2\x9b") == "\\xc2\\x9b");                       // C1 control CSI, valid UTF-8
  CHECK(excerpt("\xc2\xa0\xe4\xb8\xad") == "\xc2\xa0\xe4\xb8\xad"); // printable UTF-8 stays
  CHECK(excerpt(std::string(10'000'000, '\x01'), 60) == [] {
    std::string e;
    for (int i = 0; i < 60; ++i)
      e += "\\x01";
    return e + "... (10000000 bytes)";
  }());
  // Lines keep their tabs, repeated in the caret line; a long line is a window.
  CHECK(excerptLine("\tab", 1) == "\tab\n\t^");
  CHECK(excerptLine("x\x1by", 2) == "x\\x1by\n     ^");
  CHECK(excerptLine("ab", 2) == "ab\n  ^");
  std::string line = std::string(100, 'a') + "X" + std::string(100, 'b');
  CHECK(excerptLine(line, 100, 5) == "...aaaaaXbbbb...\n        ^");
  CHECK(excerptLine(std::string(1000, '\x80'), 500, 2) ==
        "...\\x80\\x80\\x80\\x80...\n           ^");
}

TEST_CASE("any truncation or byte damage gives a ParseError, never a crash", "[parser][robust]") {
  const std::string text = "graph g {  # damaged below\n"
                           "  %x = input bf16[64, 4096]\n"
                           "  %w = input bf16[11008, 4096]\n"
                           "  %b = input bf16[11008]\n"
                           "  %h = matmul %x, %w, trans_b=true\n"
                           "  kernel k0 {\n"
                           "    %hb = add %h, %b\n"
                           "    %y = gelu_tanh %hb\n"
                           "    %z = cast %y, to=f32\n"
                           "  }\n"
                           "  %s = mul -1.5e-3, %z\n"
                           "  output %y, %s\n"
                           "}\n";
  REQUIRE_NOTHROW(parseModule(text, "ok.kf"));
  const char replacements[] = {'\0', '%', '=', ',',  '[', ']', '{',    '}', '#',
                               '-',  '9', 'e', '\n', ' ', '.', '\xff', 'x'};
  size_t parsed = 0, rejected = 0;
  auto attempt = [&](const std::string &damaged) {
    try {
      auto graphs = parseModule(damaged, "d.kf");
      for (auto &g : graphs)
        verify(*g);
      ++parsed;
    } catch (const ParseError &e) {
      CHECK(std::string_view(e.what()).substr(0, 5) == "d.kf:");
      ++rejected;
    }
  };
  for (size_t len = 0; len < text.size(); ++len)
    attempt(text.substr(0, len));
  for (size_t i = 0; i < text.size(); ++i)
    for (char c : replacements) {
      std::string damaged = text;
      damaged[i] = c;
      attempt(damaged);
      attempt(text.substr(0, i) + text.substr(i + 1)); // deleted byte
    }
  CHECK(rejected > parsed); // most damage breaks the file; some (in comments) does not
  CHECK(parsed > 0);
}
