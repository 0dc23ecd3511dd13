#pragma once
/// Differential checking of passes against the reference interpreter: a pipeline is run one
/// pass at a time, the graph is verified after each, and the interpreter's outputs after
/// each pass are compared with those before it. What "the same" means depends on the pass:
///
/// - Bitwise (cse, dce, fuse: they move, merge or group nodes but never change arithmetic):
///   every output element has the same float64 bits, sign of zero included; the one
///   exception is NaN, which equals any NaN (payloads are not part of kfuse's semantics).
/// - Rounding (simplify: folding (x*a)*b into x*(a*b) rounds a*b to f32 once instead of
///   rounding nothing, x*1, x+(-0), x-0, x/1 are exact, and a cast to its operand's own dtype
///   goes with the rounding it did): NaN exactly where the other is NaN, infinities equal,
///   and otherwise |a - b| <= tol * max(1, |a|, |b|) + kErrorMargin * E, with tol =
///   roundingTolerance(loosest dtype in the graph), because a one-ulp change in a 16-bit
///   intermediate reaches every output after it, and E the error scale of the graph before
///   the pass (ir/ErrorBound.h: each op's rounding, grown by the ops after it), because a
///   change of one rounding is amplified where the ops after it cancel (rsqrt(cast(x + 1) -
///   1) near x = 0), as the GPU checks allow it.
///
/// Used by the unit tests (tests/unit/PipelineInterpretTest.cpp) and by `kfuse check`.
#include "ir/Graph.h"
#include "ir/Tensor.h"

#include <llvm/ADT/ArrayRef.h>
#include <string>
#include <string_view>
#include <vector>

namespace kfuse {

enum class Agreement { Bitwise, Rounding };

/// The agreement a pass promises (Rounding for simplify, Bitwise for every other pass).
Agreement passAgreement(std::string_view pass);
/// 4 units in the last place of `t` (machine epsilon 2^-23, 2^-10, 2^-7), relative: 2^-21
/// for f32, 2^-8 for f16, 2^-5 for bf16.
double roundingTolerance(DType t);
/// The dtype with the fewest mantissa bits among the graph's nodes.
DType loosestDType(const Graph &g);

/// "" when `got` agrees with `want` (same count, types and elements under `how`), else a
/// description naming the output, the element and both values. `maxError`, when given, is
/// raised to the largest |a - b| / max(1, |a|, |b|) seen among finite element pairs.
/// `errorScale`, when given (Rounding only), is E for each element of `want`'s outputs.
std::string compareOutputs(llvm::ArrayRef<Tensor> want, llvm::ArrayRef<Tensor> got, Agreement how,
                           DType loosest, double *maxError = nullptr,
                           llvm::ArrayRef<Tensor> errorScale = {});

struct PipelineCheck {
  std::string failure;         ///< "" when every pass kept its promise
  std::string failedPass;      ///< the pass after which it failed ("" before any)
  double maxRoundingError = 0; ///< largest relative error a Rounding pass introduced
  size_t elementsCompared = 0; ///< output elements compared, over all passes
};

/// Runs `passes` one by one on a clone of `g` (verifying after each) and compares the
/// interpreter's outputs on `inputs` after each pass with those before it; finally the end
/// result against the original with the weakest agreement of the pipeline. Never throws for
/// a failing pass: a verifier or interpreter error is reported in `failure`.
PipelineCheck checkPipeline(const Graph &g, llvm::ArrayRef<Tensor> inputs,
                            llvm::ArrayRef<std::string> passes);

} // namespace kfuse
