// libFuzzer target for the builder API: the bytes, read front to back, are a program of
// builder calls (one opcode byte, then its argument bytes; missing bytes read as 0):
//   0 input (dtype, rank, dims, name)   1 unary op          2 binary op: tensor/tensor,
//   tensor/scalar, scalar/tensor or scalar/scalar   3 cast   4 matmul (trans_a, trans_b)
//   5 output   6 Graph::create with any op, operand count and attributes   7 misuse: an
//   operand from another graph, or unary()/binary() with an op of the wrong class.
//   0xf0..0xf7 a reduction (op, operand, axes, keepdims)   0xf8..0xff a composite of
//   ir/Composites.h (softmax, log_softmax, rms_norm, layer_norm, var_mean) on any values.
// A call the API rejects must throw kfuse::Error and leave the graph as it was; whatever was
// built must then pass FuzzCheck (verify, text round trip, -O2 pipeline, report, codegen).
// Set KFUSE_FUZZ_TRACE=1 to print each call (turns a crash input into a readable repro).
#include "fuzz/FuzzCheck.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Printer.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

using namespace kfuse;

namespace {

struct Reader {
  const uint8_t *p, *end;
  bool done() const { return p >= end; }
  uint8_t byte() { return p < end ? *p++ : 0; }
};

const OpKind kUnary[] = {
#define KF_OP(E, name, arity, cls) KF_IS_##cls(E)
#define KF_IS_Unary(E) OpKind::E,
#define KF_IS_Binary(E)
#define KF_IS_Source(E)
#define KF_IS_Cast(E)
#define KF_IS_Contraction(E)
#define KF_IS_Reduction(E)
#include "ir/Ops.def"
};
const OpKind kBinary[] = {
#define KF_OP(E, name, arity, cls) KF_IS2_##cls(E)
#define KF_IS2_Unary(E)
#define KF_IS2_Binary(E) OpKind::E,
#define KF_IS2_Source(E)
#define KF_IS2_Cast(E)
#define KF_IS2_Contraction(E)
#define KF_IS2_Reduction(E)
#include "ir/Ops.def"
};
const OpKind kAll[] = {
#define KF_OP(E, name, arity, cls) OpKind::E,
#include "ir/Ops.def"
};

// Builder.h's free functions, so the API a user calls is what gets fuzzed.
using UnaryFn = Value (*)(Value);
const UnaryFn kUnaryFns[] = {
#define KF_OP(E, name, arity, cls) KF_FN_##cls(name)
#define KF_FN_Unary(name) [](Value a) { return name(a); },
#define KF_FN_Binary(name)
#define KF_FN_Source(name)
#define KF_FN_Cast(name)
#define KF_FN_Contraction(name)
#define KF_FN_Reduction(name)
#include "ir/Ops.def"
};
struct BinaryFns {
  Value (*tt)(Value, Value);
  Value (*ts)(Value, double);
  Value (*st)(double, Value);
};
const BinaryFns kBinaryFns[] = {
#define KF_OP(E, name, arity, cls) KF_BF_##cls(name)
#define KF_BF_Unary(name)
#define KF_BF_Binary(name)                                                                         \
  {[](Value a, Value b) { return name(a, b); }, [](Value a, double b) { return name(a, b); },      \
   [](double a, Value b) { return name(a, b); }},
#define KF_BF_Source(name)
#define KF_BF_Cast(name)
#define KF_BF_Contraction(name)
#define KF_BF_Reduction(name)
#include "ir/Ops.def"
};

using ReduceFn = Value (*)(Value, IntList, bool);
struct ReductionFn {
  const char *name;
  ReduceFn fn;
};
const ReductionFn kReductionFns[] = {
#define KF_OP(E, name, arity, cls) KF_RF_##cls(name)
#define KF_RF_Reduction(name)                                                                      \
  {#name, [](Value a, IntList axes, bool keep) { return name(a, axes, keep); }},
#define KF_RF_Unary(name)
#define KF_RF_Binary(name)
#define KF_RF_Source(name)
#define KF_RF_Cast(name)
#define KF_RF_Contraction(name)
#include "ir/Ops.def"
};

const Attr kAllAttrs[] = {
#define KF_ATTR(E, name, type) Attr::E,
#include "ir/Ops.def"
};

/// Any attribute, each set or not, with a value of its type or (rarely) of another, so that
/// Graph::create sees attributes its op does not take and values of the wrong type.
Attrs randomAttrs(Reader &r) {
  Attrs attrs;
  for (Attr a : kAllAttrs) {
    uint8_t b = r.byte();
    if (!(b & 1))
      continue;
    AttrType t = (b & 0x70) == 0x70 ? AttrType((b >> 1) % 4) : attrType(a);
    switch (t) {
    case AttrType::Bool:
      attrs.set(a, bool(b & 2));
      break;
    case AttrType::Int:
      attrs.set(a, int64_t(int8_t(r.byte())));
      break;
    case AttrType::IntList:
      attrs.set(a, IntList{int8_t(r.byte()), int8_t(r.byte())});
      break;
    case AttrType::DType:
      attrs.set(a, allDTypes[(b >> 1) % 3]);
      break;
    }
  }
  return attrs;
}

/// Up to 3 axes in -5..5 (0 axes: the empty list), any order, repeats possible.
IntList randomAxes(Reader &r) {
  IntList axes;
  for (int i = 0, n = r.byte() % 4; i < n; ++i)
    axes.push_back(int8_t(r.byte()) % 6);
  return axes;
}

constexpr size_t kMaxCalls = 128;
constexpr double kInf = std::numeric_limits<double>::infinity();
const double kScalars[] = {0.0,
                           -0.0,
                           1.0,
                           -1.0,
                           0.5,
                           2.0,
                           3.0e38,
                           -3.0e38,
                           1e-45,
                           1e-300,
                           kInf,
                           -kInf,
                           std::numeric_limits<double>::quiet_NaN(),
                           7.25,
                           -1e10,
                           65504.0};
// Mostly small dims with many 1s (broadcasting); a few that must be rejected or are huge.
int64_t dim(uint8_t b) {
  static const int64_t small[] = {1, 2, 3, 4, 1, 5, 7, 8, 1, 16, 0, 1};
  if (b < 240)
    return small[b % (sizeof small / sizeof small[0])];
  static const int64_t odd[] = {-1,
                                1 << 20,
                                int64_t(1) << 40,
                                int64_t(1) << 48,
                                std::numeric_limits<int64_t>::max(),
                                4096,
                                11008,
                                -7,
                                int64_t(1) << 24,
                                3,
                                2,
                                1,
                                1,
                                1,
                                1,
                                1};
  return odd[b - 240];
}

bool trace = false;

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  trace = std::getenv("KFUSE_FUZZ_TRACE") != nullptr;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Reader r{data, data + size};
  Graph g("fuzz");
  Graph other("other");
  Value foreign = other.input("f", f32, {4});
  std::vector<Node *> pool; // every value built so far
  auto pick = [&](uint8_t b) -> Node * { return pool.empty() ? nullptr : pool[b % pool.size()]; };
  for (size_t call = 0; call < kMaxCalls && !r.done(); ++call) {
    // 0xf0..0xf7 a reduction, 0xf8..0xff a composite; other bytes the ops below, % 8.
    uint8_t opByte = r.byte();
    uint8_t op = opByte >= 0xf0 ? 8 + (opByte >= 0xf8) : opByte % 8;
    std::string before = trace ? printGraph(g) : std::string();
    size_t nodesBefore = g.numNodes(), outputsBefore = g.outputs().size();
    try {
      if (op == 0) {
        DType dt = allDTypes[r.byte() % 3];
        Shape s;
        for (int i = 0, rank = r.byte() % 5; i < rank; ++i)
          s.push_back(dim(r.byte()));
        uint8_t nb = r.byte();
        std::string name = nb >= 250 ? "" : "x" + std::to_string(nb % 16);
        if (trace)
          std::fprintf(stderr, "input %s %s\n", name.c_str(), TensorType{dt, s}.str().c_str());
        pool.push_back(g.input(name, dt, s));
        continue;
      }
      if (pool.empty())
        continue; // every other call needs a value
      if (op == 1) {
        uint8_t k = r.byte() % (sizeof kUnary / sizeof kUnary[0]);
        Node *a = pick(r.byte());
        if (trace)
          std::fprintf(stderr, "%s(%u)\n", opName(kUnary[k]).data(), a->id());
        pool.push_back(kUnaryFns[k](a));
      } else if (op == 2) {
        uint8_t k = r.byte() % (sizeof kBinary / sizeof kBinary[0]);
        uint8_t form = r.byte() % 4;
        Node *a = pick(r.byte()), *b = pick(r.byte());
        double s = kScalars[r.byte() % 16];
        if (trace)
          std::fprintf(stderr, "%s form %u (%u, %u, %g)\n", opName(kBinary[k]).data(), form,
                       a->id(), b->id(), s);
        const BinaryFns &f = kBinaryFns[k];
        if (form == 0)
          pool.push_back(f.tt(a, b));
        else if (form == 1)
          pool.push_back(f.ts(a, s));
        else if (form == 2)
          pool.push_back(f.st(s, b));
        else
          pool.push_back(g.binary(kBinary[k], Operand::literal(s), Operand::literal(s)));
      } else if (op == 3) {
        Node *a = pick(r.byte());
        DType dt = allDTypes[r.byte() % 3];
        if (trace)
          std::fprintf(stderr, "cast(%u, %s)\n", a->id(), dtypeName(dt));
        pool.push_back(cast(a, dt));
      } else if (op == 4) {
        Node *a = pick(r.byte()), *b = pick(r.byte());
        uint8_t t = r.byte();
        MatMulAttrs attrs{.transA = bool(t & 1), .transB = bool(t & 2)};
        if (trace)
          std::fprintf(stderr, "matmul(%u, %u, %d, %d)\n", a->id(), b->id(), attrs.transA,
                       attrs.transB);
        pool.push_back(matmul(a, b, attrs));
      } else if (op == 5) {
        Node *a = pick(r.byte());
        if (trace)
          std::fprintf(stderr, "output(%u)\n", a->id());
        g.output(a);
      } else if (op == 6) {
        OpKind k = kAll[r.byte() % (sizeof kAll / sizeof kAll[0])];
        llvm::SmallVector<Operand, 3> ops;
        for (int i = 0, n = r.byte() % 4; i < n; ++i) {
          uint8_t b = r.byte();
          ops.push_back(b & 1 ? Operand(pick(b >> 1)) : Operand::literal(kScalars[b % 16]));
        }
        Attrs attrs = randomAttrs(r);
        if (trace)
          std::fprintf(stderr, "create(%s, %zu operands, %zu attributes)\n", opName(k).data(),
                       ops.size(), attrs.size());
        pool.push_back(g.create(k, ops, attrs));
      } else if (op == 8) {
        const ReductionFn &f =
            kReductionFns[r.byte() % (sizeof kReductionFns / sizeof kReductionFns[0])];
        Node *a = pick(r.byte());
        IntList axes = randomAxes(r);
        bool keep = r.byte() & 1;
        if (trace)
          std::fprintf(stderr, "%s(%u, axes=%s, keepdims=%d)\n", f.name, a->id(),
                       AttrValue(axes).str().c_str(), keep);
        pool.push_back(f.fn(a, axes, keep));
      } else if (op == 9) {
        static const double kEps[] = {1e-5, 1e-6, 0.0, -1.0, kInf, 1e39, 0.5, 1e-30};
        static const double kCorrection[] = {1, 0, 2, -1, 0.5, kInf, 100, 1};
        uint8_t which = r.byte() % 7;
        Node *x = pick(r.byte()), *w = pick(r.byte()), *b = pick(r.byte());
        int64_t axis = int8_t(r.byte()) % 4;
        double eps = kEps[r.byte() % 8];
        if (trace)
          std::fprintf(stderr, "composite %u (x %u, w %u, b %u, axis %lld, eps %g)\n", which,
                       x->id(), w->id(), b->id(), static_cast<long long>(axis), eps);
        if (which == 0)
          pool.push_back(softmax(x, axis));
        else if (which == 1)
          pool.push_back(log_softmax(x, axis));
        else if (which == 2)
          pool.push_back(rms_norm(x, w, eps));
        else if (which == 3)
          pool.push_back(rms_norm(x, eps));
        else if (which == 4)
          pool.push_back(layer_norm(x, w, b, eps));
        else if (which == 5)
          pool.push_back(layer_norm(x, w, eps));
        else {
          IntList axes = randomAxes(r);
          double c = kCorrection[r.byte() % 8];
          auto [var, mean] = var_mean(x, axes, c, r.byte() & 1);
          pool.push_back(var);
          pool.push_back(mean);
        }
      } else {
        uint8_t b = r.byte();
        if (trace)
          std::fprintf(stderr, "misuse %u\n", b % 3);
        if (b % 3 == 0)
          pool.push_back(add(Value(pick(b)), foreign));
        else if (b % 3 == 1)
          pool.push_back(g.unary(kBinary[b % 7], pick(b)));
        else
          pool.push_back(g.binary(kUnary[b % 12], pick(b), pick(b >> 2)));
      }
    } catch (const Error &e) {
      if (trace)
        std::fprintf(stderr, "  -> error: %s\n", e.what());
      // A rejected call must not have changed the graph.
      if (g.numNodes() != nodesBefore || g.outputs().size() != outputsBefore ||
          (trace && printGraph(g) != before))
        fuzz::finding("a rejected builder call changed the graph", e.what());
    }
  }
  if (pool.empty())
    return 0;
  if (g.outputs().empty())
    g.output(pool.back());
  fuzz::checkAcceptedGraph(g);
  return 0;
}
