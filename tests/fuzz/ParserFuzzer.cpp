// libFuzzer target: bytes -> parseModule. A ParseError is the expected answer to bad input
// (checked: its what() is "FILE:LINE:COL: error: MESSAGE" with the fields it carries); a
// crash, sanitizer report, leak, hang or any other exception is a finding. Input that parses
// must pass FuzzCheck (verify, print -> parse -> print identity, -O2 pipeline), and the whole
// module must print, parse back and print identically too.
#include "fuzz/FuzzCheck.h"
#include "ir/Parser.h"
#include "ir/Printer.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

using namespace kfuse;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  std::vector<std::unique_ptr<Graph>> graphs;
  try {
    graphs = parseModule(text, "fuzz.kf");
  } catch (const ParseError &e) {
    std::string head = fmt::format("fuzz.kf:{}:{}: error: {}", e.line, e.column, e.message);
    if (e.line < 1 || e.column < 1 || e.message.empty() ||
        std::string_view(e.what()).substr(0, head.size()) != head)
      fuzz::finding("malformed ParseError",
                    std::string(e.what()) + "\nexpected it to start: " + head);
    return 0;
  }
  if (graphs.empty())
    fuzz::finding("parseModule returned no graph and no error");
  std::vector<const Graph *> view;
  for (const auto &g : graphs) {
    fuzz::checkAcceptedGraph(*g);
    view.push_back(g.get());
  }
  std::string printed = printModule(view);
  std::vector<std::unique_ptr<Graph>> back;
  try {
    back = parseModule(printed, "printed.kf");
  } catch (const ParseError &e) {
    fuzz::finding("the printed module does not parse", std::string(e.what()) + "\n" + printed);
  }
  std::vector<const Graph *> backView;
  for (const auto &g : back)
    backView.push_back(g.get());
  if (printModule(backView) != printed)
    fuzz::finding("module print -> parse -> print differs", printed);
  return 0;
}
