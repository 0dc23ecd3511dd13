// kfuse dot's writer (analysis/Dot.h): DOT escaping of any user name, stable output, and on
// random graphs, edges and clusters that agree with the traffic model byte for byte.
#include "RandomGraph.h"

#include "ir/Builder.h"
#include "ir/Verifier.h"
#include "analysis/Dot.h"
#include "passes/PassManager.h"
#include "analysis/Traffic.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <unistd.h>

using namespace kfuse;

static bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

TEST_CASE("dotQuote escapes quotes, backslashes, newlines and bytes DOT cannot show", "[dot]") {
  CHECK(dotQuote("") == "\"\"");
  CHECK(dotQuote("plain name.1") == "\"plain name.1\"");
  CHECK(dotQuote("a\"b") == "\"a\\\"b\"");
  CHECK(dotQuote("a\\b") == "\"a\\\\b\"");
  // A trailing backslash must not swallow the closing quote.
  CHECK(dotQuote("end\\") == "\"end\\\\\"");
  CHECK(dotQuote("\\\"") == "\"\\\\\\\"\"");
  // Graphviz's own label escapes (\N, \G, \l) stay literal text.
  CHECK(dotQuote("\\N\\l") == "\"\\\\N\\\\l\"");
  CHECK(dotQuote("two\nlines") == "\"two\\nlines\"");
  CHECK(dotQuote("tab\there") == "\"tab\\\\x09here\"");
  CHECK(dotQuote("cr\r") == "\"cr\\\\x0d\"");
  CHECK(dotQuote(std::string("nul\0x", 5)) == "\"nul\\\\x00x\"");
  CHECK(dotQuote("del\x7f") == "\"del\\\\x7f\"");
  // Braces, brackets, semicolons and '<' are plain characters inside a quoted string.
  CHECK(dotQuote("{a}; [b] <c> -> d") == "\"{a}; [b] <c> -> d\"");
  // Valid UTF-8 passes through; invalid bytes are shown, never passed on.
  CHECK(dotQuote("\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80") ==
        "\"\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80\"");
  CHECK(dotQuote("\x80") == "\"\\\\x80\"");                       // lone continuation byte
  CHECK(dotQuote("x\xc3") == "\"x\\\\xc3\"");                     // truncated at the end
  CHECK(dotQuote("\xc0\xaf") == "\"\\\\xc0\\\\xaf\"");            // overlong '/'
  CHECK(dotQuote("\xed\xa0\x80") == "\"\\\\xed\\\\xa0\\\\x80\""); // surrogate
  CHECK(dotQuote("\xf4\x90\x80\x80") == "\"\\\\xf4\\\\x90\\\\x80\\\\x80\""); // > U+10FFFF
  CHECK(dotQuote("\xe4\xb8") == "\"\\\\xe4\\\\xb8\""); // 3-byte sequence cut short
}

/// Checks that `dot` is a sequence of DOT statements of the forms graphToDot writes, each
/// quoted string closed on its own line: a raw newline or an unescaped quote in a name
/// would break this.
static void checkWellFormed(const std::string &dot) {
  static const std::regex str(R"("(?:[^"\\\n]|\\.)*")");
  static const std::regex line(
      R"(^(digraph S \{|  label=S;|  labelloc=t;|  node \[shape=box, style=filled, fillcolor=white\];)"
      R"(|  n\d+ \[label=S, shape=invhouse\];|  subgraph cluster_\d+ \{|    label=S;)"
      R"(|    style=S;|    fillcolor=S;|    n\d+ \[label=S\];|  \}|  out\d+ \[label=S, shape=house\];)"
      R"(|  n\d+ -> (n|out)\d+ \[label=S(, style=dashed, color=gray50, fontcolor=gray50)?\];|\})$)");
  std::istringstream in(dot);
  std::string l;
  while (std::getline(in, l)) {
    INFO(l);
    CHECK(std::regex_match(std::regex_replace(l, str, "S"), line));
  }
}

/// A graph whose names hold every character DOT treats specially.
static std::unique_ptr<Graph> awkwardGraph() {
  auto g = std::make_unique<Graph>("g \"quoted\" \\ back\nslash");
  auto x = g->input("x\"}; n0 -> n1 [", f32, {4});
  auto y = g->input("back\\slash\\", f32, {4});
  Value a = exp(x);
  a->setName("new\nline\r\t");
  Value b = a * y;
  b->setName("\xc3\xa9t\xc3\xa9 \xff");
  g->output(b);
  g->output(a);
  verify(*g);
  return g;
}

TEST_CASE("graphToDot escapes every user name and stays well formed", "[dot]") {
  auto g = awkwardGraph();
  std::string dot = graphToDot(*g, parseTarget("seed"));
  checkWellFormed(dot);
  CHECK(contains(dot, "digraph \"g \\\"quoted\\\" \\\\ back\\nslash\" {"));
  CHECK(contains(dot, "[label=\"input %x\\\"}; n0 -> n1 [\\nf32[4]\", shape=invhouse];"));
  CHECK(contains(dot, "[label=\"input %back\\\\slash\\\\\\nf32[4]\", shape=invhouse];"));
  CHECK(contains(dot, "%new\\nline\\\\x0d\\\\x09 = exp %x\\\"}; n0 -> n1 ["));
  CHECK(contains(dot, "[label=\"output %\xc3\xa9t\xc3\xa9 \\\\xff\", shape=house];"));
  // Graphviz itself reads it, and shows the names as written.
  if (std::system("command -v dot > /dev/null 2>&1") != 0) {
    WARN("graphviz is not installed: rendering not checked");
    return;
  }
  std::string base = "/tmp/kfuse-dottest-" + std::to_string(::getpid());
  { std::ofstream(base + ".dot") << dot; }
  int rc =
      std::system(("dot -Tsvg -o " + base + ".svg " + base + ".dot 2> " + base + ".err").c_str());
  std::ifstream svgIn(base + ".svg"), errIn(base + ".err");
  std::string svg((std::istreambuf_iterator<char>(svgIn)), {});
  std::string err((std::istreambuf_iterator<char>(errIn)), {});
  std::remove((base + ".dot").c_str());
  std::remove((base + ".svg").c_str());
  std::remove((base + ".err").c_str());
  REQUIRE(rc == 0);
  CHECK(err.empty());
  CHECK(contains(svg, ">input %x&quot;}; n0 &#45;&gt; n1 [</text>"));
  CHECK(contains(svg, ">input %back\\slash\\</text>"));
  CHECK(contains(svg, ">%new</text>"));
  CHECK(contains(svg, ">line\\x0d\\x09 = exp %x&quot;}; n0 &#45;&gt; n1 [</text>"));
  CHECK(contains(svg, ">output %\xc3\xa9t\xc3\xa9 \\xff</text>"));
}

TEST_CASE("graphToDot: the same graph gives the same text", "[dot]") {
  Target d = parseTarget("seed");
  auto g = awkwardGraph();
  std::string once = graphToDot(*g, d);
  CHECK(graphToDot(*g, d) == once);
  CHECK(graphToDot(*g->clone(), d) == once);
  // The same random graph built twice and run through the same passes: the same text (node
  // ids, kernel names and DOT ids all follow creation and program order).
  for (uint64_t seed = 0; seed < 50; ++seed) {
    std::string first;
    for (int copy = 0; copy < 2; ++copy) {
      auto r = test::randomGraph(seed);
      PassManager pm;
      pm.addPipeline(defaultPipeline());
      pm.run(*r);
      std::string text = graphToDot(*r, d);
      if (copy == 0)
        first = text;
      else
        CHECK(text == first);
    }
  }
}

/// What the picture says, read back from the text: each node's cluster, and per edge its
/// ends and kind.
struct Picture {
  std::map<size_t, int> clusterOf; ///< node position -> cluster index (absent: top level)
  std::map<int, std::string> clusterLabel;
  std::set<size_t> inputs;
  struct Edge {
    size_t from;
    bool toOutput;
    size_t to;
    std::string label;
    bool dashed;
  };
  std::vector<Edge> edges;
};

static Picture readPicture(const std::string &dot) {
  static const std::regex cluster(R"(^  subgraph cluster_(\d+) \{$)");
  static const std::regex clabel(R"re(^    label="(.*)";$)re");
  static const std::regex member(R"(^    n(\d+) \[label=.*\];$)");
  static const std::regex input(R"(^  n(\d+) \[label=.*, shape=invhouse\];$)");
  static const std::regex edge(
      R"re(^  n(\d+) -> (n|out)(\d+) \[label="([^"]*)"(, style=dashed.*)?\];$)re");
  Picture p;
  std::istringstream in(dot);
  std::string l;
  int open = -1;
  std::smatch m;
  while (std::getline(in, l)) {
    if (std::regex_match(l, m, cluster)) {
      open = std::stoi(m[1]);
    } else if (l == "  }") {
      open = -1;
    } else if (open >= 0 && std::regex_match(l, m, clabel)) {
      p.clusterLabel[open] = m[1];
    } else if (std::regex_match(l, m, member)) {
      REQUIRE(open >= 0);
      p.clusterOf[std::stoul(m[1])] = open;
    } else if (std::regex_match(l, m, input)) {
      p.inputs.insert(std::stoul(m[1]));
    } else if (std::regex_match(l, m, edge)) {
      p.edges.push_back({std::stoul(m[1]), m[2] == "out", std::stoul(m[3]), m[4], m[5].matched});
    }
  }
  return p;
}

TEST_CASE("random graphs: clusters and edge bytes agree with the traffic model", "[dot][random]") {
  Target d = parseTarget("seed");
  for (uint64_t seed = 0; seed < 300; ++seed) {
    for (bool fused : {false, true}) {
      INFO("seed " << seed << (fused ? " fused" : " as written"));
      auto g = test::randomGraph(seed);
      if (fused) {
        PassManager pm;
        pm.addPipeline(defaultPipeline());
        pm.run(*g);
      }
      verify(*g);
      std::string dot = graphToDot(*g, d);
      TrafficPlan plan = fusedTraffic(*g, d);
      Picture p = readPicture(dot);
      const std::vector<Node *> &nodes = g->nodes();
      // Every op in one cluster, every input outside; one cluster per kernel, labelled
      // with its name and bytes.
      REQUIRE(p.clusterLabel.size() == plan.kernels.size());
      for (size_t i = 0; i < nodes.size(); ++i)
        CHECK((nodes[i]->isInput() ? p.inputs.count(i) : p.clusterOf.count(i)) == 1);
      for (const auto &[c, label] : p.clusterLabel) {
        const KernelTraffic &k = plan.kernels[c];
        CHECK(label.rfind(k.name + "\\n" + formatBytes(double(k.bytesRead)) + " read, " +
                              formatBytes(double(k.bytesWritten)) + " written\\n" +
                              formatSeconds(k.seconds),
                          0) == 0);
      }
      // One edge per distinct operand tensor of each op, plus one per output.
      size_t expected = g->outputs().size();
      for (const Node *n : nodes) {
        std::set<const Node *> ops;
        for (const Operand &o : n->operands())
          if (o.node)
            ops.insert(o.node);
        expected += ops.size();
      }
      CHECK(p.edges.size() == expected);
      // Per kernel: the plain edges into it carry exactly its bytes read; the values with
      // a solid edge out of it are exactly its bytes written.
      std::vector<int64_t> read(plan.kernels.size(), 0), written(plan.kernels.size(), 0);
      std::set<size_t> leaving;
      for (const Picture::Edge &e : p.edges) {
        const Node *from = nodes.at(e.from);
        INFO(e.from << " -> " << e.to << ": " << e.label);
        std::string bytes = formatBytes(double(from->type().bytes()));
        int cFrom = from->isInput() ? -1 : p.clusterOf.at(e.from);
        if (e.toOutput) {
          CHECK(g->outputs()[e.to] == from);
          CHECK(e.label == bytes);
          CHECK(!e.dashed);
          leaving.insert(e.from);
          continue;
        }
        int cTo = p.clusterOf.at(e.to);
        bool inside = cFrom == cTo;
        CHECK(e.dashed == inside);
        if (inside) {
          CHECK(e.label == bytes + " (in registers)");
          continue;
        }
        leaving.insert(e.from);
        if (e.label == bytes)
          read[cTo] += from->type().bytes();
        else
          CHECK(e.label == bytes + " (already read by this kernel)");
      }
      for (size_t i : leaving)
        if (!nodes[i]->isInput())
          written[p.clusterOf.at(i)] += nodes[i]->type().bytes();
      for (size_t k = 0; k < plan.kernels.size(); ++k) {
        INFO("kernel " << plan.kernels[k].name);
        CHECK(read[k] == plan.kernels[k].bytesRead);
        CHECK(written[k] == plan.kernels[k].bytesWritten);
      }
    }
  }
}
