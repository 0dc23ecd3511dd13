// specials_vs_torch: compares the reference interpreter (ir/Interpreter.h) with PyTorch on
// special values, from the JSON that bench/probe/torch_specials.py writes.
//
//   specials_vs_torch torch.json [--max-ulps N] [--verbose]
//
// For each elementwise op of ir/Ops.def and each tag of the JSON ("cpu-float32",
// "cuda-float64", ...; and "scalar"/"vector" where torch's two paths disagreed):
//  - float32 tags: a one-op f32 graph is run through interpret() on the same inputs (the
//    values the kernels would load; the interpreter rounds its output to f32, as a kernel
//    that computes in f32 and stores does), and compared with torch's f32 result in f32;
//  - float64 tags: evalUnary / evalBinary (the interpreter's float64 scalar semantics) on
//    the inputs as given, compared in f64 (kfuse has no f64 dtype; this checks the
//    formulas themselves, without f32 rounding in the way);
//  - casts: an f32 -> f16 / bf16 cast graph, compared as 16-bit patterns.
// Bit for bit: the sign of zero counts, any NaN equals any NaN. A transcendental op (exp,
// log, rsqrt, tanh, sigmoid, gelu, gelu_tanh, silu, pow) on finite non-zero inputs may
// differ by --max-ulps (default 4; more for gelu/gelu_tanh below zero, whose 1 + erf / 1 +
// tanh cancels in torch's f32 arithmetic) when both results are finite, non-zero and of
// one sign; anything special (NaN, +-Inf, +-0 in or out) must match exactly.
//
// Prints one line per disagreement: DISAGREE (not explained) or DEVIATION (in the list of
// deliberate deviations below, with its reason), and a summary. Exits 0 when every
// disagreement is a listed deviation, 1 when one is not, 2 on bad input (unreadable JSON,
// an op of Ops.def missing from it, an op kfuse does not have, lengths that do not fit).
#include "ir/DType.h"
#include "ir/Error.h"
#include "ir/Graph.h"
#include "ir/Interpreter.h"
#include "ir/Op.h"

#include <llvm/Support/JSON.h>
#include <llvm/Support/MemoryBuffer.h>

#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace kfuse;

/// The bits of a float or double (std::bit_cast is C++20; this file is C++17, see
/// bench/CMakeLists.txt).
template <class U, class F> static U bitsOf(F f) {
  static_assert(sizeof(U) == sizeof(F));
  U u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

namespace {

[[noreturn]] void die(const std::string &msg) {
  std::fprintf(stderr, "specials_vs_torch: error: %s\n", msg.c_str());
  std::exit(2);
}

/// torch_specials.py's encoding: "nan", "inf", "-inf", "0", "-0", else Python's repr.
double decode(llvm::StringRef s) {
  if (s == "nan" || s == "-nan")
    return std::numeric_limits<double>::quiet_NaN();
  if (s == "inf")
    return std::numeric_limits<double>::infinity();
  if (s == "-inf")
    return -std::numeric_limits<double>::infinity();
  std::string str = s.str();
  char *end = nullptr;
  double v = std::strtod(str.c_str(), &end);
  if (str.empty() || *end != '\0')
    die(fmt::format("not a number in the JSON: '{}'", str));
  return v;
}

std::vector<double> decodeList(const llvm::json::Value *v, const std::string &what) {
  const llvm::json::Array *a = v ? v->getAsArray() : nullptr;
  if (!a)
    die(fmt::format("'{}' is missing or not an array", what));
  std::vector<double> out;
  for (const llvm::json::Value &e : *a) {
    auto s = e.getAsString();
    if (!s)
      die(fmt::format("an element of '{}' is not a string", what));
    out.push_back(decode(*s));
  }
  return out;
}

enum class Prec { F32, F64 };

std::string show(double v, Prec p) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  if (v == 0)
    return std::signbit(v) ? "-0" : "0";
  if (p == Prec::F32)
    return fmt::format("{:.9g} (0x{:08x})", v, bitsOf<uint32_t>(static_cast<float>(v)));
  return fmt::format("{:.17g}", v);
}
std::string showIn(double v) { return show(v, Prec::F64).substr(0, show(v, Prec::F64).find(' ')); }

/// Distance in units in the last place, on the ordered integer line of the format.
int64_t ulps(double a, double b, Prec p) {
  if (p == Prec::F32) {
    int64_t x = bitsOf<uint32_t>(static_cast<float>(a));
    int64_t y = bitsOf<uint32_t>(static_cast<float>(b));
    auto ord = [](int64_t u) { return (u & 0x80000000) ? -(u & 0x7fffffff) : u; };
    return std::llabs(ord(x) - ord(y));
  }
  uint64_t x = bitsOf<uint64_t>(a), y = bitsOf<uint64_t>(b);
  auto ord = [](uint64_t u) -> __int128 {
    return (u >> 63) ? -static_cast<__int128>(u & 0x7fffffffffffffffull) : static_cast<__int128>(u);
  };
  __int128 d = ord(x) - ord(y);
  if (d < 0)
    d = -d;
  return d > INT64_MAX ? INT64_MAX : static_cast<int64_t>(d);
}

bool isTranscendental(OpKind k) {
  switch (k) {
  case OpKind::Exp: case OpKind::Log: case OpKind::Rsqrt: case OpKind::Tanh:
  case OpKind::Sigmoid: case OpKind::Gelu: case OpKind::GeluTanh: case OpKind::Silu:
  case OpKind::Pow:
    return true;
  default:
    return false;
  }
}

/// The ulp budget of a transcendental op at these inputs. torch computes gelu and gelu_tanh
/// as x/2 (1 + erf(..)) / x/2 (1 + tanh(..)) in f32: below zero 1 + erf cancels, and an
/// error of a few ulps of 1 in erf becomes a relative error 1 / (1 + erf) times larger in
/// the result, which the f64 interpreter does not make. So there the budget is `base` ulps
/// of 1 carried through the factor: base * (1 + 1 / (2 phi)) ulps of the result, where phi
/// = gelu(x) / x = (1 + erf) / 2 (1140 ulps at x = -3 on torch 2.15's CPU, budget 1484).
int64_t ulpBudget(OpKind k, llvm::ArrayRef<double> in, double kfuseValue, int64_t base) {
  if ((k == OpKind::Gelu || k == OpKind::GeluTanh) && in[0] < 0 && kfuseValue != 0) {
    double phi = std::fabs(kfuseValue / in[0]);
    return static_cast<int64_t>(std::ceil(base * (1.0 + 1.0 / (2.0 * phi))));
  }
  return base;
}

/// A deliberate deviation of kfuse from PyTorch: which cases it covers and why.
struct Deviation {
  const char *id;
  std::function<bool(const std::string &op, const std::string &tag, llvm::ArrayRef<double> in,
                     double torchV, double kfuseV)>
      matches;
  const char *reason;
  int hits = 0;
};

bool startsWith(const std::string &s, const char *prefix) { return s.rfind(prefix, 0) == 0; }
bool f32Tag(const std::string &tag) { return tag.find("-float32") != std::string::npos; }

/// The deliberate deviations, each with its reason. A disagreement that none of them
/// matches fails the run. Each entry is as narrow as the case it explains (op, inputs,
/// tag, and what both sides returned), so a new disagreement nearby is not swallowed.
std::vector<Deviation> deliberateDeviations() {
  return {
      {"max-min-signed-zero",
       [](const std::string &op, const std::string &, llvm::ArrayRef<double> in, double t,
          double k) {
         return (op == "max" || op == "min") && in[0] == 0 && in[1] == 0 &&
                std::signbit(in[0]) != std::signbit(in[1]) && t == 0 && k == 0;
       },
       "kfuse's max/min are IEEE 754-2019 maximum/minimum (-0 < +0: max(-0, +0) = +0 and "
       "min(-0, +0) = -0 in either order); torch.maximum/minimum return one operand by "
       "argument order (and path), so its signed zero depends on the order "
       "(tests/unit/SpecialValuesTest.cpp, ir/Interpreter.cpp evalBinary)"},
      {"relu-negative-zero",
       [](const std::string &op, const std::string &, llvm::ArrayRef<double> in, double t,
          double k) {
         return op == "relu" && in[0] == 0 && std::signbit(in[0]) && t == 0 && k == 0;
       },
       "kfuse's relu(x) is IEEE maximum(x, +0) (NaN propagates), so relu(-0) = +0, the same "
       "rule as max(-0, +0) = +0; torch's CPU relu (clamp_min) returns its operand, -0 "
       "(tests/unit/SpecialValuesTest.cpp)"},
      {"f64-intermediate-underflow",
       [](const std::string &op, const std::string &tag, llvm::ArrayRef<double> in, double t,
          double k) {
         return (op == "sigmoid" || op == "silu") && f32Tag(tag) && in[0] < -87 && t == 0 &&
                k != 0 && std::fabs(k) < 0x1p-126 && std::signbit(t) == std::signbit(k);
       },
       "the interpreter evaluates in float64 (ir/Interpreter.h), where exp(-x) for x < -88.7 "
       "does not overflow: it returns the exact result, an f32 denormal; torch's f32 "
       "arithmetic (like an f32 kernel's) overflows exp(-x) to inf and returns +-0"},
      {"torch-cpu-f32-gelu-inf",
       [](const std::string &op, const std::string &tag, llvm::ArrayRef<double> in, double t,
          double k) {
         return op == "gelu" && startsWith(tag, "cpu-float32") && in[0] == INFINITY &&
                std::isnan(t) && k == INFINITY;
       },
       "torch's vectorised f32 CPU gelu (its erf approximation) returns NaN at +inf; its "
       "scalar path (a 1-element tensor) and f64 return +inf = inf * (1 + erf(inf)) / 2, "
       "as kfuse does"},
      {"torch-cpu-f64-sqrt-rounding",
       [](const std::string &op, const std::string &tag, llvm::ArrayRef<double> in, double t,
          double k) {
         return op == "sqrt" && startsWith(tag, "cpu-float64") && std::isfinite(in[0]) &&
                in[0] > 0 && std::isfinite(t) && ulps(t, k, Prec::F64) <= 1;
       },
       "torch's f64 CPU sqrt is not correctly rounded here (1 ulp: sqrt(2) = "
       "1.4142135623730949, on an AVX512 host); kfuse's std::sqrt is IEEE 754 "
       "correctly rounded, as CUDA's sqrt is"},
  };
}

struct Stats {
  int compared = 0, exact = 0, withinUlps = 0, documented = 0, undocumented = 0;
  std::map<std::string, int> perTag; // disagreements by tag
};

struct Checker {
  int64_t maxUlps = 4;
  bool verbose = false;
  std::vector<Deviation> deviations = deliberateDeviations();
  Stats st;

  /// One comparison. `in` are the inputs as the kernel/interpreter saw them.
  void compare(const std::string &op, OpKind k, const std::string &tag, Prec p,
               llvm::ArrayRef<double> in, double torchV, double kfuseV) {
    ++st.compared;
    if (p == Prec::F32) { // both are f32 values; make sure of it
      torchV = static_cast<float>(torchV);
      kfuseV = static_cast<float>(kfuseV);
    }
    bool tn = std::isnan(torchV), kn = std::isnan(kfuseV);
    if ((tn && kn) || (!tn && !kn && bitsOf<uint64_t>(torchV) == bitsOf<uint64_t>(kfuseV))) {
      ++st.exact;
      return;
    }
    int64_t d = (tn || kn) ? -1 : ulps(torchV, kfuseV, p);
    bool inputsOrdinary = true;
    for (double x : in)
      inputsOrdinary &= std::isfinite(x) && x != 0;
    bool resultsOrdinary = !tn && !kn && std::isfinite(torchV) && std::isfinite(kfuseV) &&
                           torchV != 0 && kfuseV != 0 && std::signbit(torchV) == std::signbit(kfuseV);
    if (isTranscendental(k) && inputsOrdinary && resultsOrdinary &&
        d <= ulpBudget(k, in, kfuseV, maxUlps)) {
      ++st.withinUlps;
      if (verbose)
        std::printf("within %lld ulps: %s %s %s torch=%s kfuse=%s\n", (long long)d, op.c_str(),
                    tag.c_str(), inputs(in).c_str(), show(torchV, p).c_str(),
                    show(kfuseV, p).c_str());
      return;
    }
    std::string line = fmt::format("{} {} {} torch={} kfuse={}{}", op, tag, inputs(in),
                                   show(torchV, p), show(kfuseV, p),
                                   d >= 0 ? fmt::format(" ({} ulps)", d) : "");
    for (Deviation &dev : deviations)
      if (dev.matches(op, tag, in, torchV, kfuseV)) {
        ++dev.hits;
        ++st.documented;
        std::printf("DEVIATION [%s] %s\n", dev.id, line.c_str());
        return;
      }
    ++st.undocumented;
    ++st.perTag[tag];
    std::printf("DISAGREE %s\n", line.c_str());
  }

  static std::string inputs(llvm::ArrayRef<double> in) {
    std::string s = "(";
    for (size_t i = 0; i < in.size(); ++i)
      s += (i ? ", " : "") + showIn(in[i]);
    return s + ")";
  }
};

/// The variants of one op/tag entry: a list, or {"scalar": list, "vector": list}.
std::vector<std::pair<std::string, std::vector<double>>>
variants(const llvm::json::Value &v, const std::string &what) {
  if (v.getAsArray())
    return {{"", decodeList(&v, what)}};
  const llvm::json::Object *o = v.getAsObject();
  if (!o)
    die(fmt::format("'{}' is neither a list nor {{scalar, vector}}", what));
  std::vector<std::pair<std::string, std::vector<double>>> out;
  for (const char *key : {"scalar", "vector"})
    out.push_back({std::string("/") + key, decodeList(o->get(key), what + "." + key)});
  return out;
}

/// Parses "dev-float32" style tags; returns the dtype part.
std::string tagDType(const std::string &tag) {
  size_t dash = tag.rfind('-');
  return dash == std::string::npos ? "" : tag.substr(dash + 1);
}

OpKind opOf(const std::string &name, OpClass want) {
  auto k = parseOpKind(name);
  if (!k || opClass(*k) != want)
    die(fmt::format("'{}' in the JSON is not a kfuse {} op", name,
                    want == OpClass::Unary ? "unary" : "binary"));
  return *k;
}

std::vector<double> asF32(const std::vector<double> &v) {
  std::vector<double> out;
  for (double x : v)
    out.push_back(static_cast<float>(x));
  return out;
}

/// kfuse's f32 results through the interpreter: one op graph over all the inputs at once.
std::vector<double> interpretUnaryF32(OpKind k, const std::vector<double> &x) {
  Graph g("probe");
  int64_t n = static_cast<int64_t>(x.size());
  Value in = g.input("x", DType::F32, {n});
  g.output(g.unary(k, in));
  std::vector<Tensor> outs = interpret(g, {Tensor(in.type(), x)});
  return outs.at(0).data;
}
std::vector<double> interpretBinaryF32(OpKind k, const std::vector<double> &a,
                                       const std::vector<double> &b) {
  Graph g("probe");
  int64_t n = static_cast<int64_t>(a.size());
  Value x = g.input("a", DType::F32, {n});
  Value y = g.input("b", DType::F32, {n});
  g.output(g.binary(k, x.node(), y.node()));
  std::vector<Tensor> outs = interpret(g, {Tensor(x.type(), a), Tensor(y.type(), b)});
  return outs.at(0).data;
}
std::vector<double> interpretCast(DType to, const std::vector<double> &x) {
  Graph g("probe");
  int64_t n = static_cast<int64_t>(x.size());
  Value in = g.input("x", DType::F32, {n});
  g.output(g.cast(in, to));
  std::vector<Tensor> outs = interpret(g, {Tensor(in.type(), x)});
  return outs.at(0).data;
}

bool isHalfNaN(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }
bool isBF16NaN(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f); }

} // namespace

int main(int argc, char **argv) {
  Checker c;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--max-ulps" && i + 1 < argc)
      c.maxUlps = std::atoll(argv[++i]);
    else if (a == "--verbose")
      c.verbose = true;
    else if (a == "-h" || a == "--help") {
      std::printf("usage: specials_vs_torch torch.json [--max-ulps N] [--verbose]\n");
      return 0;
    } else if (path.empty())
      path = a;
    else
      die("usage: specials_vs_torch torch.json [--max-ulps N] [--verbose]");
  }
  if (path.empty())
    die("usage: specials_vs_torch torch.json [--max-ulps N] [--verbose]");

  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    die(fmt::format("cannot read {}: {}", path, buf.getError().message()));
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse((*buf)->getBuffer());
  if (!parsed)
    die(fmt::format("{} is not JSON: {}", path, llvm::toString(parsed.takeError())));
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root)
    die("the JSON is not an object");

  std::string version = root->getString("torch").getValueOr("?").str();
  std::vector<double> U = decodeList(root->get("U"), "U");
  std::vector<double> B = decodeList(root->get("B"), "B");
  std::vector<double> C = decodeList(root->get("C"), "C");
  const llvm::json::Object *unary = root->getObject("unary");
  const llvm::json::Object *binary = root->getObject("binary");
  const llvm::json::Object *cast = root->getObject("cast");
  if (!unary || !binary || !cast)
    die("'unary', 'binary' or 'cast' is missing");

  std::set<std::string> tags;
  try {
    // Every elementwise op of Ops.def must be in the JSON, and nothing else.
    std::set<std::string> seenU, seenB;
    for (const auto &kv : *unary)
      seenU.insert(kv.first.str());
    for (const auto &kv : *binary)
      seenB.insert(kv.first.str());
    for (int k = 0; k <= int(OpKind::MatMul); ++k) {
      OpClass cls = opClass(OpKind(k));
      std::string name(opName(OpKind(k)));
      if (cls == OpClass::Unary && !seenU.count(name))
        die(fmt::format("unary op '{}' of ir/Ops.def is not in the JSON", name));
      if (cls == OpClass::Binary && !seenB.count(name))
        die(fmt::format("binary op '{}' of ir/Ops.def is not in the JSON", name));
    }

    std::vector<double> U32 = asF32(U);
    for (const auto &kv : *unary) {
      std::string op = kv.first.str();
      OpKind k = opOf(op, OpClass::Unary);
      const llvm::json::Object *perTag = kv.second.getAsObject();
      if (!perTag)
        die(fmt::format("unary.{} is not an object", op));
      std::vector<double> k32 = interpretUnaryF32(k, U32);
      for (const auto &tv : *perTag) {
        std::string tag = tv.first.str(), dt = tagDType(tag);
        for (auto &[suffix, torchVals] : variants(tv.second, "unary." + op + "." + tag)) {
          if (torchVals.size() != U.size())
            die(fmt::format("unary.{}.{} has {} values for {} inputs", op, tag, torchVals.size(), U.size()));
          tags.insert(tag);
          for (size_t i = 0; i < U.size(); ++i) {
            if (dt == "float32")
              c.compare(op, k, tag + suffix, Prec::F32, {U32[i]}, torchVals[i], k32[i]);
            else if (dt == "float64")
              c.compare(op, k, tag + suffix, Prec::F64, {U[i]}, torchVals[i], evalUnary(k, U[i]));
            else
              die(fmt::format("tag '{}': dtype not float32 / float64", tag));
          }
        }
      }
    }

    std::vector<double> A, Bv;
    for (double p : B)
      for (double q : B) {
        A.push_back(p);
        Bv.push_back(q);
      }
    std::vector<double> A32 = asF32(A), B32 = asF32(Bv);
    for (const auto &kv : *binary) {
      std::string op = kv.first.str();
      OpKind k = opOf(op, OpClass::Binary);
      const llvm::json::Object *perTag = kv.second.getAsObject();
      if (!perTag)
        die(fmt::format("binary.{} is not an object", op));
      std::vector<double> k32 = interpretBinaryF32(k, A32, B32);
      for (const auto &tv : *perTag) {
        std::string tag = tv.first.str(), dt = tagDType(tag);
        for (auto &[suffix, torchVals] : variants(tv.second, "binary." + op + "." + tag)) {
          if (torchVals.size() != A.size())
            die(fmt::format("binary.{}.{} has {} values for {} pairs", op, tag, torchVals.size(), A.size()));
          tags.insert(tag);
          for (size_t i = 0; i < A.size(); ++i) {
            if (dt == "float32")
              c.compare(op, k, tag + suffix, Prec::F32, {A32[i], B32[i]}, torchVals[i], k32[i]);
            else if (dt == "float64")
              c.compare(op, k, tag + suffix, Prec::F64, {A[i], Bv[i]}, torchVals[i],
                        evalBinary(k, A[i], Bv[i]));
            else
              die(fmt::format("tag '{}': dtype not float32 / float64", tag));
          }
        }
      }
    }

    // Casts f32 -> f16 / bf16, as bit patterns (any NaN equals any NaN).
    std::vector<double> C32 = asF32(C);
    for (const auto &kv : *cast) {
      std::string tag = kv.first.str(), dt = tagDType(tag);
      DType to;
      if (dt == "float16")
        to = DType::F16;
      else if (dt == "bfloat16")
        to = DType::BF16;
      else
        die(fmt::format("cast tag '{}': not float16 / bfloat16", tag));
      const llvm::json::Array *arr = kv.second.getAsArray();
      if (!arr || arr->size() != C.size())
        die(fmt::format("cast.{} is not a list of {} bit patterns", tag, C.size()));
      tags.insert(tag);
      std::vector<double> got = interpretCast(to, C32);
      for (size_t i = 0; i < C.size(); ++i) {
        auto s = (*arr)[i].getAsString();
        if (!s)
          die(fmt::format("cast.{}[{}] is not a string", tag, i));
        unsigned long tb = std::strtoul(s->str().c_str(), nullptr, 16);
        uint16_t t = static_cast<uint16_t>(tb);
        float f = static_cast<float>(got[i]);
        uint16_t kb = to == DType::F16 ? floatToHalfBits(f) : floatToBF16Bits(f);
        bool tn = to == DType::F16 ? isHalfNaN(t) : isBF16NaN(t);
        bool kn = to == DType::F16 ? isHalfNaN(kb) : isBF16NaN(kb);
        ++c.st.compared;
        if ((tn && kn) || (!tn && !kn && t == kb)) {
          ++c.st.exact;
          continue;
        }
        ++c.st.undocumented;
        ++c.st.perTag[tag];
        std::printf("DISAGREE cast %s (%s) torch=%04x kfuse=%04x\n", tag.c_str(),
                    showIn(C32[i]).c_str(), t, kb);
      }
    }
  } catch (const kfuse::Error &e) {
    die(fmt::format("kfuse: {}", e.what()));
  }

  std::string tagList;
  for (const std::string &t : tags)
    tagList += (tagList.empty() ? "" : " ") + t;
  std::printf("\ntorch %s; tags: %s\n", version.c_str(), tagList.c_str());
  std::printf("cases compared: %d; agree: %d (%d bit for bit, %d within the ulp budget of "
              "transcendentals, max %lld ulps)\n",
              c.st.compared, c.st.exact + c.st.withinUlps, c.st.exact, c.st.withinUlps,
              (long long)c.maxUlps);
  std::printf("disagreements: %d (%d documented deliberate deviations, %d not explained)\n",
              c.st.documented + c.st.undocumented, c.st.documented, c.st.undocumented);
  for (const Deviation &d : c.deviations)
    std::printf("  deviation [%s]: %d cases%s — %s\n", d.id, d.hits,
                d.hits ? "" : " (none seen in this JSON)", d.reason);
  for (const auto &[tag, n] : c.st.perTag)
    std::printf("  not explained in %s: %d\n", tag.c_str(), n);
  std::printf("%s\n", c.st.undocumented ? "FAIL: disagreements not in the list of deliberate deviations"
                                        : "OK: every disagreement is a documented deliberate deviation");
  return c.st.undocumented ? 1 : 0;
}
