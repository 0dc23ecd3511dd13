// Op attributes (ir/Attrs.h): values of every type compare, hash and round-trip through
// their text; the declarations of ir/Ops.def are consistent; nodes store the complete set,
// which clone copies and the printer writes; and the parser rejects unknown, missing,
// duplicate and wrong-typed attributes with a positioned error.
#include "ir/Attrs.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Parser.h"
#include "ir/Printer.h"

#include <catch2/catch.hpp>
#include <limits>
#include <set>

using namespace kfuse;

namespace {

/// One value of each type, and values that differ only a little from them.
std::vector<AttrValue> sampleValues() {
  return {true,
          false,
          int64_t(0),
          int64_t(1),
          int64_t(-1),
          std::numeric_limits<int64_t>::min(),
          std::numeric_limits<int64_t>::max(),
          IntList{},
          IntList{0},
          IntList{-1, 0},
          IntList{0, -1},
          IntList{-1, 0, 0},
          DType::F32,
          DType::F16,
          DType::BF16};
}

/// The ParseError of parsing `text`, which must fail.
ParseError parseErrorOf(const std::string &text) {
  try {
    parseModule(text, "a.kf");
  } catch (const ParseError &e) {
    return e;
  }
  FAIL("parsed without an error: " << text);
  return ParseError("", "", 0, 0, ""); // unreachable: FAIL throws
}

std::string graphWith(const std::string &op) {
  return "graph g {\n  %x = input f32[8, 8]\n  %y = " + op + "\n  output %y\n}\n";
}

} // namespace

TEST_CASE("attribute values: type, equality and hash", "[attrs]") {
  std::vector<AttrValue> values = sampleValues();
  std::set<size_t> hashes;
  for (size_t i = 0; i < values.size(); ++i) {
    INFO("value " << values[i].str());
    hashes.insert(values[i].hash());
    for (size_t j = 0; j < values.size(); ++j)
      CHECK((values[i] == values[j]) == (i == j));
    AttrValue copy = values[i];
    CHECK(copy == values[i]);
    CHECK(copy.hash() == values[i].hash());
  }
  CHECK(hashes.size() == values.size()); // none of these collide
  CHECK(AttrValue(true).type() == AttrType::Bool);
  CHECK(AttrValue(7).type() == AttrType::Int); // an int is an int64, not a bool
  CHECK(AttrValue(IntList{3}).type() == AttrType::IntList);
  CHECK(AttrValue(DType::BF16).type() == AttrType::DType);
  CHECK(AttrValue().isNone());
  CHECK(!(AttrValue() == AttrValue(IntList{})));
  CHECK(!(AttrValue(true) == AttrValue(1)));
  CHECK(AttrValue(IntList{-1, 0}).getInts() == IntList{-1, 0});
}

TEST_CASE("attribute values print as .kf text and parse back", "[attrs][parser]") {
  CHECK(AttrValue(true).str() == "true");
  CHECK(AttrValue(-3).str() == "-3");
  CHECK(AttrValue(IntList{-1, 0}).str() == "[-1, 0]");
  CHECK(AttrValue(IntList{}).str() == "[]");
  CHECK(AttrValue(DType::BF16).str() == "bf16");
  for (const AttrValue &v : sampleValues()) {
    INFO("value " << v.str());
    CHECK(parseAttrValue(v.str(), v.type()) == v);
  }
  CHECK(parseAttrValue("[ -1,0 ]", AttrType::IntList) == AttrValue(IntList{-1, 0}));
}

TEST_CASE("attribute values: malformed text is a positioned error", "[attrs][parser]") {
  auto err = [](std::string_view text, AttrType t) {
    REQUIRE_THROWS_AS(parseAttrValue(text, t, "axes"), ParseError);
    try {
      parseAttrValue(text, t, "axes");
    } catch (const ParseError &e) {
      return fmt::format("{}: {}", e.column, e.message);
    }
    return std::string();
  };
  CHECK(err("[1, x]", AttrType::IntList) ==
        "5: attribute 'axes' expects a list of integers such as [-1, 0], got 'x'");
  CHECK(err("[1 2]", AttrType::IntList) ==
        "4: expected ',' or ']' in the value of attribute 'axes', got '2'");
  CHECK(err("[1,", AttrType::IntList) ==
        "4: attribute 'axes' expects a list of integers such as [-1, 0], got end of file");
  CHECK(err("1", AttrType::IntList) ==
        "1: attribute 'axes' expects a list of integers such as [-1, 0], got '1'");
  CHECK(err("1.5", AttrType::Int) == "1: attribute 'axes' expects an integer, got '1.5'");
  CHECK(err("99999999999999999999", AttrType::Int) ==
        "1: integer '99999999999999999999' of attribute 'axes' does not fit in 64 bits");
  CHECK(err("1", AttrType::Bool) == "1: attribute 'axes' expects true or false, got '1'");
  CHECK(err("f8", AttrType::DType) ==
        "1: attribute 'axes' expects a dtype (f32, f16 or bf16), got 'f8'");
  CHECK(err("true false", AttrType::Bool) == "6: expected end of the value, got 'false'");
}

TEST_CASE("attribute sets: sorted, so equal whatever the order they were set in", "[attrs]") {
  Attrs a, b;
  a.set(Attr::TransA, true).set(Attr::TransB, false);
  b.set(Attr::TransB, false).set(Attr::TransA, true);
  CHECK(a == b);
  CHECK(a.hash() == b.hash());
  b.set(Attr::TransB, true); // replaces
  CHECK(b.size() == 2);
  CHECK(b.getBool(Attr::TransB));
  CHECK(!(a == b));
  CHECK(a.hash() != b.hash());
  CHECK(a.find(Attr::To) == nullptr);
  REQUIRE_THROWS_WITH(a.get(Attr::To), "attribute 'to' is not set");
}

TEST_CASE("Ops.def: every default has its attribute's type, no op takes one twice", "[attrs]") {
  const OpKind all[] = {
#define KF_OP(E, name, arity, cls) OpKind::E,
#include "ir/Ops.def"
  };
  for (OpKind k : all) {
    INFO("op " << opName(k));
    std::set<Attr> seen;
    for (const OpAttr &d : opAttrs(k)) {
      INFO("attribute " << attrName(d.attr));
      CHECK(seen.insert(d.attr).second);
      CHECK(parseAttrName(attrName(d.attr)) == d.attr);
      if (!d.required())
        CHECK(d.defaultValue.type() == attrType(d.attr));
    }
  }
  REQUIRE(opAttrs(OpKind::MatMul).size() == 2);
  CHECK(opAttrs(OpKind::MatMul)[0].attr == Attr::TransA);
  CHECK(opAttrs(OpKind::MatMul)[1].defaultValue == AttrValue(false));
  REQUIRE(opAttrs(OpKind::Cast).size() == 1);
  CHECK(opAttrs(OpKind::Cast)[0].required());
  CHECK(opAttrs(OpKind::Relu).empty());
  CHECK(opAttrList(OpKind::MatMul) == "trans_a, trans_b");
  CHECK(opAttrList(OpKind::Relu) == "no attributes");
}

TEST_CASE("completeAttrs fills in defaults and names the op on bad attributes", "[attrs]") {
  Attrs given;
  given.set(Attr::TransB, true);
  Attrs full = completeAttrs(OpKind::MatMul, given);
  CHECK(full.size() == 2);
  CHECK(!full.getBool(Attr::TransA));
  CHECK(full.getBool(Attr::TransB));
  REQUIRE_THROWS_WITH(completeAttrs(OpKind::Relu, given),
                      "relu: has no attribute 'trans_b' (it takes no attributes)");
  REQUIRE_THROWS_WITH(completeAttrs(OpKind::Cast, {}),
                      "cast: needs the attribute to=DTYPE (f32, f16 or bf16)");
  Attrs wrong;
  wrong.set(Attr::To, IntList{1});
  REQUIRE_THROWS_WITH(completeAttrs(OpKind::Cast, wrong),
                      "cast: attribute 'to' expects a dtype (f32, f16 or bf16), got [1]");
}

TEST_CASE("nodes store the complete set; clone and the printer keep it", "[attrs][printer]") {
  Graph g("a");
  auto x = g.input("x", f32, {4, 8});
  Attrs ta;
  ta.set(Attr::TransA, true);
  Node *m = g.create(OpKind::MatMul, {Operand(x), Operand(x)}, ta); // [8, 4] x [4, 8]
  Node *c = cast(m, bf16);
  g.output(c);
  CHECK(m->attrs().size() == 2);
  CHECK(m->matmulAttrs().transA);
  CHECK(!m->matmulAttrs().transB);
  CHECK(c->attrs().getDType(Attr::To) == DType::BF16);
  auto copy = g.clone();
  CHECK(copy->outputs()[0]->attrs() == c->attrs());
  CHECK(copy->outputs()[0]->operand(0).node->attrs() == m->attrs());
  std::string text = printGraph(g);
  CHECK(text.find("matmul %x, %x, trans_a=true  # f32[8, 8]") != std::string::npos);
  CHECK(text.find("trans_b") == std::string::npos); // at its default
  CHECK(text.find("cast %0, to=bf16  # bf16[8, 8]") != std::string::npos);
  REQUIRE_THROWS_WITH(g.create(OpKind::Relu, {Operand(x)}, ta),
                      "relu: has no attribute 'trans_a' (it takes no attributes)");
}

TEST_CASE("parser: unknown, misplaced, missing, duplicate and wrong-typed attributes",
          "[attrs][parser]") {
  struct Case {
    std::string op;
    unsigned column;
    std::string message;
  };
  const Case cases[] = {
      {"matmul %x, %x, trans_c=true", 23,
       "unknown attribute 'trans_c' (op 'matmul' takes trans_a, trans_b) (did you mean "
       "'trans_a'?)"},
      {"relu %x, foo=1", 17, "unknown attribute 'foo' (op 'relu' takes no attributes)"},
      {"cast %x, trans_a=true, to=f16", 17, "op 'cast' has no attribute 'trans_a' (it takes to)"},
      {"cast %x", 8, "'cast' needs the attribute to=DTYPE (f32, f16 or bf16)"},
      {"cast %x, to=f16, to=f32", 25, "duplicate attribute 'to'"},
      {"matmul %x, %x, trans_a=f16", 31, "attribute 'trans_a' expects true or false, got 'f16'"},
      {"matmul %x, %x, trans_a=[1]", 31, "attribute 'trans_a' expects true or false, got '['"},
      {"cast %x, to=true", 20, "attribute 'to' expects a dtype (f32, f16 or bf16), got 'true'"},
      {"cast %x, to=", 20, "attribute 'to' expects a dtype (f32, f16 or bf16), got end of line"},
  };
  for (const Case &c : cases) {
    INFO(c.op);
    ParseError e = parseErrorOf(graphWith(c.op));
    CHECK(e.line == 3);
    CHECK(e.column == c.column);
    CHECK(e.message == c.message);
  }
}

TEST_CASE("parser: attributes in any order give the same node", "[attrs][parser]") {
  auto a = parseGraph(graphWith("matmul %x, %x, trans_b=true, trans_a=true"));
  auto b = parseGraph(graphWith("matmul %x, %x, trans_a=true, trans_b=true"));
  auto c = parseGraph(graphWith("matmul %x, %x, trans_a=true, trans_b=false"));
  CHECK(a->outputs()[0]->attrs() == b->outputs()[0]->attrs());
  CHECK(!(a->outputs()[0]->attrs() == c->outputs()[0]->attrs()));
  // Printed in declaration order, defaults left out.
  CHECK(printGraph(*a).find("trans_a=true, trans_b=true") != std::string::npos);
  CHECK(printGraph(*c).find(", trans_a=true  #") != std::string::npos);
}
