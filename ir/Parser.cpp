#include "ir/Parser.h"

#include "ir/InputFile.h"
#include "ir/Lexer.h"
#include "ir/Suggest.h"
#include "ir/Verifier.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/StringRef.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace kfuse {

namespace {

/// Input text (a token, a name) as a message quotes it: at most 60 characters, escaped as
/// excerpt() escapes (ir/Error.h), so a 10 MB identifier still gives a short message.
std::string quote(std::string_view text) { return excerpt(text, 60); }

std::string describe(const Token &t) {
  switch (t.kind) {
  case TokKind::Name:
    return fmt::format("'%{}'", quote(t.text));
  case TokKind::Word:
  case TokKind::Number:
  case TokKind::Invalid:
  case TokKind::Equal:
  case TokKind::Comma:
  case TokKind::LBracket:
  case TokKind::RBracket:
  case TokKind::LBrace:
  case TokKind::RBrace:
    return fmt::format("'{}'", quote(t.text));
  case TokKind::Newline:
  case TokKind::Eof:
    break;
  }
  return tokKindName(t.kind);
}

bool isLineEnd(const Token &t) { return t.kind == TokKind::Newline || t.kind == TokKind::Eof; }

/// Parses one file's text. Each graph is a flat loop over statements; kernel regions are a
/// state of that loop, not a nested call, so nothing recurses.
class Parser {
public:
  Parser(std::string_view text, std::string_view file) : text_(text), file_(file), lex_(text) {}

  std::vector<std::unique_ptr<Graph>> run() {
    if (auto bad = findNonText(text_))
      error(bad->first, fmt::format("file is not text ({})", bad->second));
    advance();
    // One definition per line at most: sizing the name table once saves its rehashes.
    defs_.reserve(static_cast<unsigned>(
        std::min<size_t>(std::count(text_.begin(), text_.end(), '\n') + 1, size_t(1) << 24)));
    std::vector<std::unique_ptr<Graph>> graphs;
    std::unordered_map<std::string_view, unsigned> graphLines;
    for (;;) {
      skipNewlines();
      if (tok_.kind == TokKind::Eof)
        break;
      if (tok_.kind != TokKind::Word || tok_.text != "graph")
        error(tok_, fmt::format("expected 'graph', got {}", describe(tok_)));
      graphs.push_back(parseGraph(graphLines));
    }
    if (graphs.empty())
      error(0, "no graph in file");
    return graphs;
  }

  /// The whole text as one value of `type` (see kfuse::parseAttrValue).
  AttrValue runValue(AttrType type, std::string_view attr) {
    if (auto bad = findNonText(text_))
      error(bad->first, fmt::format("value is not text ({})", bad->second));
    advance();
    AttrValue v = parseAttrValue(attr, type);
    if (tok_.kind != TokKind::Eof)
      error(tok_, fmt::format("expected end of the value, got {}", describe(tok_)));
    return v;
  }

private:
  struct Def {
    Node *node;
    unsigned line;
  };

  [[noreturn]] void error(const Token &t, const std::string &msg) { error(t.loc.offset, msg); }

  /// Throws the ParseError at byte `offset`: the message, then the source line (at most
  /// excerptLine's window of it, escaped) with a caret under the column.
  [[noreturn]] void error(size_t offset, const std::string &msg) {
    offset = std::min(offset, text_.size());
    size_t lineStart = 0;
    if (offset > 0) {
      size_t nl = text_.rfind('\n', offset - 1);
      lineStart = nl == std::string_view::npos ? 0 : nl + 1;
    }
    if (lineStart == 0 && offset >= 3 && text_.substr(0, 3) == "\xEF\xBB\xBF")
      lineStart = 3; // line 1 starts after a byte order mark, as the lexer reads it
    unsigned line =
        1 + static_cast<unsigned>(std::count(text_.begin(), text_.begin() + lineStart, '\n'));
    size_t lineEnd = text_.find('\n', lineStart);
    if (lineEnd == std::string_view::npos)
      lineEnd = text_.size();
    std::string_view lineText = text_.substr(lineStart, lineEnd - lineStart);
    if (!lineText.empty() && lineText.back() == '\r')
      lineText.remove_suffix(1);
    // Columns count characters: UTF-8 continuation bytes belong to the character before.
    // Everything before `offset` is valid text (findNonText stops at the first bad byte).
    unsigned column = 1;
    for (size_t i = lineStart; i < offset; ++i)
      column += (static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80;
    std::string diag = fmt::format("{}:{}:{}: error: {}", file_, line, column, msg);
    if (lineText.find_first_not_of(" \t") != std::string_view::npos)
      diag += "\n" + excerptLine(lineText, offset - lineStart);
    throw ParseError(diag, std::string(file_), line, column, msg);
  }
  /// A builder or verifier error, re-thrown at `at`. Bounded like every quote of input:
  /// it may name a graph or value whose name is megabytes long.
  [[noreturn]] void relay(const Token &at, const Error &e) { error(at, excerpt(e.what(), 1000)); }

  void advance() {
    if (hasPeek_) {
      tok_ = peek_;
      hasPeek_ = false;
    } else {
      tok_ = lex_.next();
    }
  }
  const Token &peek() {
    if (!hasPeek_) {
      peek_ = lex_.next();
      hasPeek_ = true;
    }
    return peek_;
  }
  void skipNewlines() {
    while (tok_.kind == TokKind::Newline)
      advance();
  }
  bool isWord(std::string_view w) const { return tok_.kind == TokKind::Word && tok_.text == w; }
  /// `what` names the expected token ("'=' after '%x'"); it is only built on an error.
  template <typename What> void expect(TokKind k, What what) {
    if (tok_.kind != k)
      error(tok_, fmt::format("expected {}, got {}", what(), describe(tok_)));
    advance();
  }
  void expectLineEnd(std::string_view after) {
    if (tok_.kind == TokKind::Newline)
      advance();
    else if (tok_.kind != TokKind::Eof)
      error(tok_, fmt::format("expected end of line after {}, got {}", after, describe(tok_)));
  }

  std::unique_ptr<Graph> parseGraph(std::unordered_map<std::string_view, unsigned> &graphLines);
  void parseDefinition(Graph &g, int kernel);
  Node *parseInput(Graph &g, const Token &nameTok, const Token &opTok, int kernel);
  Node *parseOp(Graph &g, OpKind kind, const Token &opTok);
  void parseOperand(llvm::SmallVectorImpl<Operand> &operands);
  void parseAttribute(OpKind kind, Attrs &attrs);
  AttrValue parseAttrValue(std::string_view attr, AttrType type);
  int64_t parseInt(std::string_view attr, AttrType type);
  void parseOutput(Graph &g);
  double parseLiteral(const Token &t);
  int64_t parseDim(const Token &t);

  std::string_view text_, file_;
  Lexer lex_;
  Token tok_, peek_;
  bool hasPeek_ = false;
  llvm::DenseMap<llvm::StringRef, Def> defs_; // names of the graph being parsed
};

std::unique_ptr<Graph>
Parser::parseGraph(std::unordered_map<std::string_view, unsigned> &graphLines) {
  Token kw = tok_;
  advance();
  if (tok_.kind != TokKind::Word)
    error(tok_, fmt::format("expected a graph name after 'graph', got {}", describe(tok_)));
  Token nameTok = tok_;
  auto [it, fresh] = graphLines.emplace(nameTok.text, nameTok.loc.line);
  if (!fresh)
    error(nameTok, fmt::format("graph '{}' is defined twice (first at line {})",
                               quote(nameTok.text), it->second));
  advance();
  expect(TokKind::LBrace,
         [&] { return fmt::format("'{{' after 'graph {}'", quote(nameTok.text)); });
  expectLineEnd("'{'");

  auto g = std::make_unique<Graph>(std::string(nameTok.text));
  defs_.clear();
  std::unordered_map<std::string_view, unsigned> kernelLines;
  int kernel = -1;
  Token kernelTok;
  size_t kernelStartNodes = 0;
  bool sawOutput = false;
  for (;;) {
    skipNewlines();
    if (tok_.kind == TokKind::Eof) {
      if (kernel >= 0)
        error(tok_, fmt::format("expected '}}' to close kernel '{}' (opened at line {})",
                                quote(kernelTok.text), kernelTok.loc.line));
      error(tok_, fmt::format("expected '}}' to close graph '{}' (opened at line {})",
                              quote(nameTok.text), kw.loc.line));
    }
    if (tok_.kind == TokKind::RBrace && kernel >= 0) {
      if (g->numNodes() == kernelStartNodes)
        error(kernelTok, fmt::format("kernel '{}' is empty", quote(kernelTok.text)));
      kernel = -1;
      advance();
      expectLineEnd("'}'");
      continue;
    }
    if (tok_.kind == TokKind::RBrace) {
      if (!sawOutput)
        error(tok_, fmt::format("graph '{}' has no 'output' statement before its '}}'",
                                quote(nameTok.text)));
      advance();
      expectLineEnd("'}'");
      break;
    }
    if (sawOutput)
      error(tok_, fmt::format("'output' must be the last statement of graph '{}'; expected "
                              "'}}', got {}",
                              quote(nameTok.text), describe(tok_)));
    if (tok_.kind == TokKind::Name) {
      parseDefinition(*g, kernel);
    } else if (isWord("output")) {
      if (kernel >= 0)
        error(tok_, fmt::format("'output' cannot be inside kernel '{}'; close it with '}}' first",
                                quote(kernelTok.text)));
      parseOutput(*g);
      sawOutput = true;
    } else if (isWord("kernel")) {
      if (kernel >= 0)
        error(tok_, fmt::format("kernel regions cannot be nested (inside kernel '{}')",
                                quote(kernelTok.text)));
      advance();
      if (tok_.kind != TokKind::Word)
        error(tok_, fmt::format("expected a kernel name after 'kernel', got {}", describe(tok_)));
      kernelTok = tok_;
      auto [kit, kfresh] = kernelLines.emplace(tok_.text, tok_.loc.line);
      if (!kfresh)
        error(tok_, fmt::format("kernel '{}' is defined twice in graph '{}' (first at line {})",
                                quote(tok_.text), quote(nameTok.text), kit->second));
      advance();
      expect(TokKind::LBrace,
             [&] { return fmt::format("'{{' after 'kernel {}'", quote(kernelTok.text)); });
      expectLineEnd("'{'");
      kernel = g->addKernel(std::string(kernelTok.text));
      kernelStartNodes = g->numNodes();
    } else {
      error(tok_, fmt::format("expected a statement ('%name = OP ...', 'kernel', 'output' or "
                              "'}}'), got {}",
                              describe(tok_)));
    }
  }
  try {
    verify(*g);
  } catch (const Error &e) {
    relay(kw, e);
  }
  defs_.clear();
  return g;
}

void Parser::parseOutput(Graph &g) {
  advance();
  if (isLineEnd(tok_))
    error(tok_, "expected at least one %name after 'output'");
  for (;;) {
    if (tok_.kind != TokKind::Name)
      error(tok_, fmt::format("expected a %name in 'output', got {}", describe(tok_)));
    auto it = defs_.find(llvm::StringRef(tok_.text));
    if (it == defs_.end() || !it->second.node)
      error(tok_, fmt::format("use of undefined value '%{}'", quote(tok_.text)));
    g.output(it->second.node);
    advance();
    if (tok_.kind == TokKind::Comma) {
      advance();
      continue;
    }
    expectLineEnd("the outputs");
    return;
  }
}

double Parser::parseLiteral(const Token &t) {
  std::string_view s = t.text;
  bool negative = !s.empty() && s[0] == '-';
  std::string_view body = negative ? s.substr(1) : s;
  if (body == "inf")
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  if (body == "nan")
    return std::numeric_limits<double>::quiet_NaN();
  double v = 0;
  bool startsOk = !body.empty() && ((body[0] >= '0' && body[0] <= '9') || body[0] == '.');
  auto [ptr, ec] = startsOk ? std::from_chars(body.data(), body.data() + body.size(), v)
                            : std::from_chars_result{body.data(), std::errc::invalid_argument};
  if (ec == std::errc::result_out_of_range) {
    bool tiny = std::fabs(std::strtod(std::string(body).c_str(), nullptr)) < 1.0;
    error(t, tiny ? fmt::format("literal '{}' is too small for f32 (it would round to 0)", quote(s))
                  : fmt::format("literal '{}' overflows f32 (largest finite value "
                                "3.4028235e+38)",
                                quote(s)));
  }
  if (ec != std::errc() || ptr != body.data() + body.size())
    error(t, fmt::format("malformed number literal '{}'", quote(s)));
  // Values from here on round to infinity in f32 (half an ulp above the largest float).
  if (std::fabs(v) >= 0x1.ffffffp+127)
    error(t,
          fmt::format("literal '{}' overflows f32 (largest finite value 3.4028235e+38)", quote(s)));
  return negative ? -v : v;
}

int64_t Parser::parseDim(const Token &t) {
  if (t.kind != TokKind::Number)
    error(t, fmt::format("expected a dimension (a non-negative integer), got {}", describe(t)));
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
  if (ec == std::errc::result_out_of_range)
    error(t, fmt::format("dimension '{}' is too large (a tensor holds at most 2^48 elements)",
                         quote(t.text)));
  if (ec != std::errc() || ptr != t.text.data() + t.text.size())
    error(t, fmt::format("expected a dimension (a non-negative integer), got '{}'", quote(t.text)));
  return v;
}

void Parser::parseDefinition(Graph &g, int kernel) {
  Token nameTok = tok_;
  if (nameTok.text.empty())
    error(nameTok, "expected a name after '%' (letters, digits, '_' or '.')");
  // Claimed now (one lookup); the entry's node stays null, i.e. undefined, until the op
  // is built, so `%y = relu %y` reads as a use of an undefined value.
  auto [defIt, freshName] = defs_.try_emplace(llvm::StringRef(nameTok.text), Def{nullptr, 0});
  if (!freshName)
    error(nameTok, fmt::format("redefinition of '%{}' (first defined at line {})",
                               quote(nameTok.text), defIt->second.line));
  Def *def = &defIt->second; // stable: nothing is inserted until this definition ends
  advance();
  expect(TokKind::Equal, [&] { return fmt::format("'=' after '%{}'", quote(nameTok.text)); });
  if (tok_.kind != TokKind::Word)
    error(tok_,
          fmt::format("expected an op after '%{} =', got {}", quote(nameTok.text), describe(tok_)));
  Token opTok = tok_;
  std::optional<OpKind> kind = parseOpKind(opTok.text);
  if (!kind)
    error(opTok, fmt::format("unknown op '{}'{}", quote(opTok.text),
                             didYouMean(opTok.text, opNames())));
  advance();

  Node *node;
  if (*kind == OpKind::Input) {
    node = parseInput(g, nameTok, opTok, kernel);
  } else {
    node = parseOp(g, *kind, opTok);
    node->setName(std::string(nameTok.text));
    node->setKernel(kernel);
  }
  *def = Def{node, nameTok.loc.line};
}

/// `input DTYPE[DIMS]`, after the op word.
Node *Parser::parseInput(Graph &g, const Token &nameTok, const Token &opTok, int kernel) {
  if (kernel >= 0)
    error(opTok,
          fmt::format("an input cannot be inside kernel '{}'", quote(g.kernelNames()[kernel])));
  if (tok_.kind != TokKind::Word)
    error(tok_,
          fmt::format("expected a dtype after 'input' (f32, f16 or bf16), got {}", describe(tok_)));
  Token dtTok = tok_;
  std::optional<DType> dt = parseDType(dtTok.text);
  if (!dt)
    error(dtTok, fmt::format("unknown dtype '{}' (expected f32, f16 or bf16){}", quote(dtTok.text),
                             didYouMean(dtTok.text, {"f32", "f16", "bf16"})));
  advance();
  if (tok_.kind != TokKind::LBracket)
    error(tok_, fmt::format("expected '[' after dtype '{}' (a scalar is {}[]), got {}",
                            quote(dtTok.text), quote(dtTok.text), describe(tok_)));
  Token lb = tok_;
  advance();
  Shape dims;
  while (tok_.kind != TokKind::RBracket) {
    dims.push_back(parseDim(tok_));
    advance();
    if (tok_.kind == TokKind::Comma)
      advance();
    else if (tok_.kind != TokKind::RBracket)
      error(tok_, fmt::format("expected ',' or ']' in the shape, got {}", describe(tok_)));
  }
  advance();
  expectLineEnd("the input's type");
  try {
    checkShape(fmt::format("input '%{}'", quote(nameTok.text)), dims);
    return g.input(std::string(nameTok.text), *dt, dims);
  } catch (const Error &e) {
    relay(lb, e);
  }
}

/// `OP operand, ..., name=value, ...`, after the op word: operands first, then attributes.
Node *Parser::parseOp(Graph &g, OpKind kind, const Token &opTok) {
  llvm::SmallVector<Operand, 2> operands;
  Attrs attrs;
  while (!isLineEnd(tok_)) {
    if (tok_.kind == TokKind::Word && peek().kind == TokKind::Equal) {
      parseAttribute(kind, attrs);
    } else {
      if (!attrs.empty())
        error(tok_, "operands must come before attributes");
      parseOperand(operands);
    }
    if (tok_.kind == TokKind::Comma) {
      advance();
      if (isLineEnd(tok_))
        error(tok_, "expected an operand or attribute after ','");
    } else if (!isLineEnd(tok_)) {
      error(tok_, fmt::format("expected ',' or end of line, got {}", describe(tok_)));
    }
  }
  std::string_view op = opName(kind);
  unsigned arity = opArity(kind);
  if (operands.size() != arity)
    error(opTok, fmt::format("'{}' expects {} operand{}, got {}", op, arity, arity == 1 ? "" : "s",
                             operands.size()));
  for (const OpAttr &d : opAttrs(kind))
    if (d.required() && !attrs.find(d.attr))
      error(opTok, fmt::format("'{}' needs the attribute {}={}", op, attrName(d.attr),
                               attrTypeMetavar(attrType(d.attr))));
  expectLineEnd("the op");
  try {
    return g.create(kind, operands, attrs);
  } catch (const Error &e) {
    relay(opTok, e);
  }
}

/// A %name or a literal; leaves tok_ after it.
void Parser::parseOperand(llvm::SmallVectorImpl<Operand> &operands) {
  if (tok_.kind == TokKind::Name) {
    if (tok_.text.empty())
      error(tok_, "expected a name after '%' (letters, digits, '_' or '.')");
    auto it = defs_.find(llvm::StringRef(tok_.text));
    if (it == defs_.end() || !it->second.node)
      error(tok_, fmt::format("use of undefined value '%{}'", quote(tok_.text)));
    operands.push_back(Operand(it->second.node));
  } else if (tok_.kind == TokKind::Number || isWord("inf") || isWord("nan")) {
    operands.push_back(Operand::literal(parseLiteral(tok_)));
  } else {
    error(tok_, fmt::format("expected an operand (%name or number) or an attribute "
                            "(name=value), got {}",
                            describe(tok_)));
  }
  advance();
}

/// `name=value` (tok_ is the name, peek() the '='): an attribute the op declares in
/// ir/Ops.def, given once, with a value of its type. Leaves tok_ after the value.
void Parser::parseAttribute(OpKind kind, Attrs &attrs) {
  Token key = tok_;
  std::optional<Attr> attr = parseAttrName(key.text);
  if (!attr) {
    std::vector<std::string> takes;
    for (const OpAttr &a : opAttrs(kind))
      takes.emplace_back(attrName(a.attr));
    error(key, fmt::format("unknown attribute '{}' (op '{}' takes {}){}", quote(key.text),
                           opName(kind), opAttrList(kind), didYouMean(key.text, takes)));
  }
  if (!findOpAttr(kind, *attr))
    error(key, fmt::format("op '{}' has no attribute '{}' (it takes {})", opName(kind),
                           quote(key.text), opAttrList(kind)));
  if (attrs.find(*attr))
    error(key, fmt::format("duplicate attribute '{}'", quote(key.text)));
  advance(); // the name
  advance(); // '='
  attrs.set(*attr, parseAttrValue(key.text, attrType(*attr)));
}

/// One value of `type` at tok_ (`attr` names its attribute in errors); leaves tok_ after it.
AttrValue Parser::parseAttrValue(std::string_view attr, AttrType type) {
  auto bad = [&]() -> AttrValue {
    std::string hint = type == AttrType::DType && tok_.kind == TokKind::Word
                           ? didYouMean(tok_.text, {"f32", "f16", "bf16"})
                           : std::string();
    error(tok_, fmt::format("attribute '{}' expects {}, got {}{}", attr,
                            attrTypeDescription(type), describe(tok_), hint));
  };
  AttrValue v;
  switch (type) {
  case AttrType::Bool:
    if (!isWord("true") && !isWord("false"))
      return bad();
    v = tok_.text == "true";
    break;
  case AttrType::Int:
    v = parseInt(attr, type);
    break;
  case AttrType::DType: {
    std::optional<DType> dt = tok_.kind == TokKind::Word ? parseDType(tok_.text) : std::nullopt;
    if (!dt)
      return bad();
    v = *dt;
    break;
  }
  case AttrType::IntList: {
    if (tok_.kind != TokKind::LBracket)
      return bad();
    advance();
    IntList list;
    while (tok_.kind != TokKind::RBracket) {
      list.push_back(parseInt(attr, type));
      advance();
      if (tok_.kind == TokKind::Comma)
        advance();
      else if (tok_.kind != TokKind::RBracket)
        error(tok_, fmt::format("expected ',' or ']' in the value of attribute '{}', got {}", attr,
                                describe(tok_)));
    }
    v = std::move(list);
    break;
  }
  }
  advance();
  return v;
}

/// An int64 at tok_, for a value of `type` (Int, or an element of an IntList).
int64_t Parser::parseInt(std::string_view attr, AttrType type) {
  int64_t v = 0;
  auto [ptr, ec] = tok_.kind == TokKind::Number
                       ? std::from_chars(tok_.text.data(), tok_.text.data() + tok_.text.size(), v)
                       : std::from_chars_result{tok_.text.data(), std::errc::invalid_argument};
  if (ec == std::errc::result_out_of_range)
    error(tok_, fmt::format("integer '{}' of attribute '{}' does not fit in 64 bits",
                            quote(tok_.text), attr));
  if (ec != std::errc() || ptr != tok_.text.data() + tok_.text.size())
    error(tok_, fmt::format("attribute '{}' expects {}, got {}", attr, attrTypeDescription(type),
                            describe(tok_)));
  return v;
}

} // namespace

std::vector<std::unique_ptr<Graph>> parseModule(std::string_view text, std::string_view filename) {
  return Parser(text, filename).run();
}

std::vector<std::unique_ptr<Graph>> parseFile(const std::string &path) {
  // Without blocking on open; a regular file's size checked before a byte is read; a device
  // such as /dev/zero refused (ir/InputFile.h).
  return parseModule(readModuleText(path, kMaxModuleBytes), path);
}

AttrValue parseAttrValue(std::string_view text, AttrType type, std::string_view name) {
  return Parser(text, "<value>").runValue(type, name);
}

std::unique_ptr<Graph> parseGraph(std::string_view text, std::string_view filename) {
  auto graphs = parseModule(text, filename);
  if (graphs.size() != 1)
    fail("{}: expected one graph, found {}", filename, graphs.size());
  return std::move(graphs.front());
}

} // namespace kfuse
