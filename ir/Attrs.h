#pragma once
/// Op attributes, declared with their ops in ir/Ops.def (KF_ATTR, KF_OP_ATTR).
///
/// An AttrValue is one value of one of the attribute types (bool, int64, list of int64,
/// dtype). A Node holds one Attrs: every attribute its op declares, defaults filled in,
/// sorted by Attr, so that equal attribute sets compare and hash equal and passes (CSE,
/// clone, the printer) treat all attributes alike with no code per op:
///
///   Attrs a;
///   a.set(Attr::TransB, true);
///   g.create(OpKind::MatMul, {Operand(x), Operand(w)}, a); // trans_a filled in: false
///   n->attrs().getBool(Attr::TransB);                        // true
#include "ir/DType.h"
#include "ir/Op.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/SmallVector.h>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace kfuse {

enum class Attr : uint8_t {
#define KF_ATTR(E, name, type) E,
#include "ir/Ops.def"
};

enum class AttrType : uint8_t { Bool, Int, IntList, DType };

/// The value of an IntList attribute ("axes=[-1, 0]").
using IntList = llvm::SmallVector<int64_t, 4>;

/// The attribute's text in .kf files ("trans_b"), and back.
std::string_view attrName(Attr a);
std::optional<Attr> parseAttrName(std::string_view text);
/// The one type of the attribute's values, whichever op takes it.
AttrType attrType(Attr a);
/// What a value of the type looks like, for "expects ..." messages: "true or false".
std::string_view attrTypeDescription(AttrType t);
/// The placeholder of a value in "needs the attribute to=DTYPE (f32, f16 or bf16)".
std::string_view attrTypeMetavar(AttrType t);

/// One attribute value, or none (a required attribute's "default"). Built from a bool, any
/// other integer (as int64), an IntList or a DType; the getters assert the type.
class AttrValue {
public:
  AttrValue() = default;
  // Templates, not overloads: `AttrValue(0)` must not be ambiguous between bool and int64,
  // nor a pointer turn into a bool. (No concepts: bench/probe builds this header as C++17.)
  template <typename B, std::enable_if_t<std::is_same_v<B, bool>, int> = 0>
  AttrValue(B b) : v_(std::in_place_type<bool>, b) {}
  template <typename I,
            std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
  AttrValue(I i) : v_(std::in_place_type<int64_t>, static_cast<int64_t>(i)) {}
  AttrValue(IntList l) : v_(std::in_place_type<IntList>, std::move(l)) {}
  AttrValue(DType t) : v_(std::in_place_type<DType>, t) {}

  bool isNone() const { return v_.index() == 0; }
  /// The type of a value that is not none.
  AttrType type() const;
  bool getBool() const;
  int64_t getInt() const;
  const IntList &getInts() const;
  DType getDType() const;

  bool operator==(const AttrValue &o) const { return v_ == o.v_; }
  size_t hash() const;
  /// The value as .kf text: "true", "-1", "[-1, 0]", "bf16"; "none" for none.
  std::string str() const;

private:
  // The order of the alternatives after monostate is AttrType's.
  std::variant<std::monostate, bool, int64_t, IntList, DType> v_;
};

/// A set of attribute values, one per Attr, kept sorted by Attr.
class Attrs {
public:
  using Entry = std::pair<Attr, AttrValue>;

  /// Sets (or replaces) one value; returns *this so that sets chain.
  Attrs &set(Attr a, AttrValue v);
  /// The value of `a`, or null when it is not set.
  const AttrValue *find(Attr a) const;
  /// The value of `a`; throws kfuse::Error when it is not set (a node of an op that does not
  /// declare it).
  const AttrValue &get(Attr a) const;
  bool getBool(Attr a) const { return get(a).getBool(); }
  int64_t getInt(Attr a) const { return get(a).getInt(); }
  const IntList &getInts(Attr a) const { return get(a).getInts(); }
  DType getDType(Attr a) const { return get(a).getDType(); }

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const Entry *begin() const { return entries_.begin(); }
  const Entry *end() const { return entries_.end(); }

  bool operator==(const Attrs &o) const { return entries_ == o.entries_; }
  size_t hash() const;

private:
  // No inline entries: most ops take no attribute, and every Node holds an Attrs (two
  // inline entries grew a Node from 200 to 336 bytes; this adds 16).
  llvm::SmallVector<Entry, 0> entries_;
};

/// One attribute an op takes, from a KF_OP_ATTR line; a none default means required.
struct OpAttr {
  Attr attr;
  AttrValue defaultValue;
  bool required() const { return defaultValue.isNone(); }
};

/// The attributes `k` takes, in declaration order (the order they print in).
llvm::ArrayRef<OpAttr> opAttrs(OpKind k);
/// The declaration of `a` on `k`, or null when `k` does not take it.
const OpAttr *findOpAttr(OpKind k, Attr a);
/// "trans_a, trans_b", or "no attributes": what `k` accepts, for error messages.
std::string opAttrList(OpKind k);

/// `given` checked against k's declarations, with every missing attribute at its default:
/// the form a Node stores. Throws kfuse::Error naming the op for an attribute k does not
/// take, a value of the wrong type, or a required attribute left out.
Attrs completeAttrs(OpKind k, const Attrs &given);

/// Appends ", name=value" for every attribute that is required or differs from its default,
/// in declaration order: the text form after an op's operands (", to=f32").
void appendAttrs(std::string &out, OpKind k, const Attrs &attrs);

} // namespace kfuse
