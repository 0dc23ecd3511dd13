#include "codegen/ReduceCombine.h"

#include "ir/Reduction.h"

#include <algorithm>

namespace kfuse::codegen {

std::vector<unsigned> phaseReductions(const KernelSpec &k, const ReduceSpec &r, unsigned p) {
  std::vector<unsigned> out;
  for (unsigned i = 0; i < k.ops.size(); ++i)
    if (isReduction(k.ops[i].kind) && r.phase[i] == p)
      out.push_back(i);
  return out;
}

bool isWelford(const KernelSpec &k, const ReduceSpec &r, unsigned j) {
  return r.online[j] >= 0 && k.ops[static_cast<unsigned>(r.online[j])].kind == OpKind::Mean;
}

std::vector<std::string> phaseAccumulators(const KernelSpec &k, const ReduceSpec &r, unsigned p) {
  std::vector<std::string> out;
  for (unsigned i : phaseReductions(k, r, p))
    out.push_back(fmt::format("a{}", i));
  for (unsigned i : phaseReductions(k, r, p))
    if (isWelford(k, r, i))
      out.push_back(fmt::format("n{}", i));
  return out;
}

unsigned mostAccumulators(const KernelSpec &k, const ReduceSpec &r) {
  unsigned most = 0;
  for (unsigned p = 1; p <= r.phases(); ++p)
    most = std::max(most, static_cast<unsigned>(phaseAccumulators(k, r, p).size()));
  return most;
}

std::string combineExpr(OpKind kind, const std::string &a, const std::string &b) {
  if (kind == OpKind::Amax)
    return fmt::format("kf_max({}, {})", a, b);
  if (kind == OpKind::Amin)
    return fmt::format("kf_min({}, {})", a, b);
  return fmt::format("{} + {}", a, b);
}

namespace {

/// The accumulators that combine together with reduction i, and the device function's name
/// ("": a plain reduction; "online", "welford": kf_<name>_add, kf_warp_<name>); none for a
/// reduction that combines with its partner.
std::pair<std::vector<std::string>, std::string> group(const KernelSpec &k, const ReduceSpec &r,
                                                       unsigned i) {
  if (r.online[i] >= 0)
    return {};
  for (size_t j = 0; j < r.online.size(); ++j) {
    if (r.online[j] != static_cast<int>(i))
      continue;
    if (k.ops[i].kind == OpKind::Amax)
      return {{fmt::format("a{}", i), fmt::format("a{}", j)}, "online"};
    return {{fmt::format("n{}", j), fmt::format("a{}", i), fmt::format("a{}", j)}, "welford"};
  }
  return {{fmt::format("a{}", i)}, ""};
}

std::string joined(const std::vector<std::string> &parts) {
  std::string out;
  for (const std::string &p : parts)
    out += (out.empty() ? "" : ", ") + p;
  return out;
}

} // namespace

void emitWarpCombine(Emitter &e, const KernelSpec &k, const ReduceSpec &r,
                     const std::vector<unsigned> &reds, unsigned W) {
  for (unsigned i : reds) {
    auto [accs, fn] = group(k, r, i);
    if (accs.empty())
      continue;
    if (fn.empty()) {
      const char *name = k.ops[i].kind == OpKind::Amax ? "max" : k.ops[i].kind == OpKind::Amin ? "min" : "sum";
      e.line("a{0} = kf_warp_{1}<{2}>(a{0});", i, name, W);
    } else {
      e.line("kf_warp_{}<{}>({});", fn, W, joined(accs));
    }
  }
}

void emitReadBack(Emitter &e, const KernelSpec &k, const ReduceSpec &r,
                  const std::vector<unsigned> &reds, const std::vector<std::string> &accs, unsigned n,
                  const char *var, bool unroll, const PartialAt &at) {
  auto pos = [&](const std::string &a) {
    return static_cast<size_t>(std::find(accs.begin(), accs.end(), a) - accs.begin());
  };
  for (unsigned i : reds) {
    auto [mine, fn] = group(k, r, i);
    if (mine.empty())
      continue;
    std::vector<std::string> from;
    for (const std::string &a : mine) {
      e.line("{} = {};", a, at(pos(a), "0u"));
      from.push_back(at(pos(a), var));
    }
    if (unroll)
      e.line("#pragma unroll");
    if (fn.empty())
      e.line("for (unsigned {0} = 1; {0} < {1}u; ++{0}) a{2} = {3};", var, n, i,
             combineExpr(k.ops[i].kind, fmt::format("a{}", i), from[0]));
    else
      e.line("for (unsigned {0} = 1; {0} < {1}u; ++{0}) kf_{2}_add({3}, {4});", var, n, fn,
             joined(mine), joined(from));
  }
}

} // namespace kfuse::codegen
