#include "ir/Attrs.h"

#include "ir/Error.h"

#include <algorithm>
#include <cassert>
#include <fmt/format.h>
#include <llvm/ADT/Hashing.h>
#include <vector>

namespace kfuse {

namespace {

struct AttrInfo {
  std::string_view name;
  AttrType type;
};
constexpr AttrInfo attrInfos[] = {
#define KF_ATTR(E, name, type) {#name, AttrType::type},
#include "ir/Ops.def"
};

constexpr unsigned kNumOps = 0
#define KF_OP(E, name, arity, cls) +1
#include "ir/Ops.def"
    ;

/// Every KF_OP_ATTR line, grouped by op (declaration order kept within an op), and each
/// op's range in it. Built once: a list default cannot be a constant expression.
struct OpAttrTable {
  std::vector<OpAttr> decls;
  std::pair<unsigned, unsigned> range[kNumOps] = {};
};

const OpAttrTable &opAttrTable() {
  static const OpAttrTable table = [] {
    [[maybe_unused]] const AttrValue required; // the default of an attribute with none
    std::vector<std::pair<OpKind, OpAttr>> lines = {
#define KF_OP_ATTR(Op, A, def) {OpKind::Op, OpAttr{Attr::A, AttrValue(def)}},
#include "ir/Ops.def"
    };
    std::stable_sort(lines.begin(), lines.end(),
                     [](const auto &a, const auto &b) { return a.first < b.first; });
    OpAttrTable t;
    for (auto &[op, decl] : lines) {
      auto &r = t.range[static_cast<unsigned>(op)];
      if (r.first == r.second)
        r = {unsigned(t.decls.size()), unsigned(t.decls.size())};
      ++r.second;
      t.decls.push_back(std::move(decl));
    }
    return t;
  }();
  return table;
}

} // namespace

std::string_view attrName(Attr a) { return attrInfos[static_cast<unsigned>(a)].name; }
AttrType attrType(Attr a) { return attrInfos[static_cast<unsigned>(a)].type; }

std::optional<Attr> parseAttrName(std::string_view text) {
  for (unsigned i = 0; i < std::size(attrInfos); ++i)
    if (attrInfos[i].name == text)
      return static_cast<Attr>(i);
  return std::nullopt;
}

namespace {
/// Per AttrType, in its order: how an error describes a value, and how usage writes one.
struct AttrTypeText {
  std::string_view description, metavar;
};
constexpr AttrTypeText attrTypeTexts[] = {
    {"true or false", "true|false"},                        // Bool
    {"an integer", "INT"},                                  // Int
    {"a list of integers such as [-1, 0]", "[INT, ...]"},   // IntList
    {"a dtype (f32, f16 or bf16)", "DTYPE (f32, f16 or bf16)"}, // DType
};
} // namespace

std::string_view attrTypeDescription(AttrType t) {
  return attrTypeTexts[static_cast<unsigned>(t)].description;
}

std::string_view attrTypeMetavar(AttrType t) {
  return attrTypeTexts[static_cast<unsigned>(t)].metavar;
}

// --- AttrValue

AttrType AttrValue::type() const {
  assert(!isNone());
  return static_cast<AttrType>(v_.index() - 1);
}
bool AttrValue::getBool() const {
  assert(std::holds_alternative<bool>(v_));
  return std::get<bool>(v_);
}
int64_t AttrValue::getInt() const {
  assert(std::holds_alternative<int64_t>(v_));
  return std::get<int64_t>(v_);
}
const IntList &AttrValue::getInts() const {
  assert(std::holds_alternative<IntList>(v_));
  return std::get<IntList>(v_);
}
DType AttrValue::getDType() const {
  assert(std::holds_alternative<DType>(v_));
  return std::get<DType>(v_);
}

size_t AttrValue::hash() const {
  llvm::hash_code h = llvm::hash_value(v_.index());
  if (auto *b = std::get_if<bool>(&v_))
    h = llvm::hash_combine(h, *b);
  else if (auto *i = std::get_if<int64_t>(&v_))
    h = llvm::hash_combine(h, *i);
  else if (auto *l = std::get_if<IntList>(&v_))
    h = llvm::hash_combine(h, llvm::hash_combine_range(l->begin(), l->end()));
  else if (auto *d = std::get_if<DType>(&v_))
    h = llvm::hash_combine(h, static_cast<unsigned>(*d));
  return static_cast<size_t>(h);
}

std::string AttrValue::str() const {
  if (auto *b = std::get_if<bool>(&v_))
    return *b ? "true" : "false";
  if (auto *i = std::get_if<int64_t>(&v_))
    return std::to_string(*i);
  if (auto *l = std::get_if<IntList>(&v_))
    return fmt::format("[{}]", fmt::join(*l, ", "));
  if (auto *d = std::get_if<DType>(&v_))
    return dtypeName(*d);
  return "none";
}

// --- Attrs

Attrs &Attrs::set(Attr a, AttrValue v) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), a,
                             [](const Entry &e, Attr key) { return e.first < key; });
  if (it != entries_.end() && it->first == a)
    it->second = std::move(v);
  else
    entries_.insert(it, Entry{a, std::move(v)});
  return *this;
}

const AttrValue *Attrs::find(Attr a) const {
  for (const Entry &e : entries_) // a handful at most: a scan beats a search
    if (e.first == a)
      return &e.second;
  return nullptr;
}

const AttrValue &Attrs::get(Attr a) const {
  if (const AttrValue *v = find(a))
    return *v;
  fail("attribute '{}' is not set", attrName(a));
}

size_t Attrs::hash() const {
  llvm::hash_code h = llvm::hash_value(entries_.size());
  for (const Entry &e : entries_)
    h = llvm::hash_combine(h, static_cast<unsigned>(e.first), e.second.hash());
  return static_cast<size_t>(h);
}

// --- declarations

llvm::ArrayRef<OpAttr> opAttrs(OpKind k) {
  const OpAttrTable &t = opAttrTable();
  auto [begin, end] = t.range[static_cast<unsigned>(k)];
  return llvm::ArrayRef<OpAttr>(t.decls).slice(begin, end - begin);
}

const OpAttr *findOpAttr(OpKind k, Attr a) {
  for (const OpAttr &d : opAttrs(k))
    if (d.attr == a)
      return &d;
  return nullptr;
}

std::string opAttrList(OpKind k) {
  std::string names;
  for (const OpAttr &d : opAttrs(k))
    names += fmt::format("{}{}", names.empty() ? "" : ", ", attrName(d.attr));
  return names.empty() ? "no attributes" : names;
}

Attrs completeAttrs(OpKind k, const Attrs &given) {
  std::string_view op = opName(k);
  for (const auto &[a, v] : given) {
    if (!findOpAttr(k, a))
      fail("{}: has no attribute '{}' (it takes {})", op, attrName(a), opAttrList(k));
    if (v.isNone() || v.type() != attrType(a))
      fail("{}: attribute '{}' expects {}, got {}", op, attrName(a),
           attrTypeDescription(attrType(a)), v.str());
  }
  if (given.size() == opAttrs(k).size())
    return given; // every attribute given: nothing to fill in
  Attrs out = given;
  for (const OpAttr &d : opAttrs(k)) {
    if (out.find(d.attr))
      continue;
    if (d.required())
      fail("{}: needs the attribute {}={}", op, attrName(d.attr),
           attrTypeMetavar(attrType(d.attr)));
    out.set(d.attr, d.defaultValue);
  }
  return out;
}

void appendAttrs(std::string &out, OpKind k, const Attrs &attrs) {
  for (const OpAttr &d : opAttrs(k)) {
    const AttrValue *v = attrs.find(d.attr);
    if (v && (d.required() || !(*v == d.defaultValue)))
      fmt::format_to(std::back_inserter(out), ", {}={}", attrName(d.attr), v->str());
  }
}

} // namespace kfuse
