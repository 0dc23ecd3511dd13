#pragma once
/// How a Reduce kernel's partial reductions combine across a row's lanes, warps and cluster
/// CTAs (codegen/ReduceSpec.h): sums, max and min, and the online pairs of
/// ReduceSpec::online, an amax with its sum of exp (kf_online_add) and a mean with its sum of
/// squares about it (kf_welford_add), which travel together. Each thread's partials are
/// accumulators a<i> (one per reduction) and n<j> (the element count of a variance's part).
#include "codegen/Emitter.h"
#include "codegen/KernelSpec.h"

#include <functional>
#include <string>
#include <vector>

namespace kfuse::codegen {

/// The reductions known after phase p, in program order.
std::vector<unsigned> phaseReductions(const KernelSpec &k, const ReduceSpec &r, unsigned p);
/// Whether op j is a variance about its partner mean (it also counts its part's elements).
bool isWelford(const KernelSpec &k, const ReduceSpec &r, unsigned j);
/// The accumulators phase p combines: a<i> per reduction, then n<j> per variance.
std::vector<std::string> phaseAccumulators(const KernelSpec &k, const ReduceSpec &r, unsigned p);
/// The most accumulators of any phase (the slots of shared memory each row needs).
unsigned mostAccumulators(const KernelSpec &k, const ReduceSpec &r);
/// `a` combined with `b` by reduction `kind`: a + b, kf_max(a, b) or kf_min(a, b).
std::string combineExpr(OpKind kind, const std::string &a, const std::string &b);

/// Butterfly shuffles across the W lanes of each row's warp, for phase reductions `reds`.
void emitWarpCombine(Emitter &e, const KernelSpec &k, const ReduceSpec &r,
                     const std::vector<unsigned> &reds, unsigned W);

/// The partial of accumulator position q (in `accs`) at index c, as CUDA C.
using PartialAt = std::function<std::string(size_t q, const std::string &c)>;
/// Every accumulator from the partials at(q, c), c = 0 .. n-1 (c named `var` in a loop), in
/// a fixed order, online pairs together; `unroll` asks the loop to be unrolled.
void emitReadBack(Emitter &e, const KernelSpec &k, const ReduceSpec &r,
                  const std::vector<unsigned> &reds, const std::vector<std::string> &accs, unsigned n,
                  const char *var, bool unroll, const PartialAt &at);

} // namespace kfuse::codegen
