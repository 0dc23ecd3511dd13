#pragma once
/// The reference interpreter: evaluates a Graph on the CPU in float64. It is the numeric
/// oracle of kfuse: every pass, every fused kernel and every GPU run is checked against it,
/// so it is written for obvious correctness first and only then for speed (matmul is a
/// blocked i-k-j loop so test-sized GEMMs take seconds, not minutes).
///
/// Rounding follows what a kernel that computes in f32 and stores its results does, but
/// without the f32 arithmetic: inputs are rounded to their dtype when bound, `cast` rounds to
/// its target dtype, and every graph output is rounded to its dtype. Intermediate values stay
/// float64, so an unfused and a fused graph evaluate to the same numbers. Kernel regions are
/// ignored.
#include "ir/Graph.h"
#include "ir/Tensor.h"

#include <llvm/ADT/ArrayRef.h>
#include <vector>

namespace kfuse {

/// Largest tensor (in elements) the interpreter evaluates: 2^28 float64 values are 2 GiB.
/// Bigger graphs (seed_mul has 1e9 elements) are refused with a kfuse::Error.
inline constexpr int64_t kMaxInterpretElements = int64_t(1) << 28;

/// Throws the interpreter's kfuse::Error when a tensor of `g` is over
/// kMaxInterpretElements; callers check it before they build inputs (`kfuse run --cpu`
/// would otherwise allocate the float64 inputs first). interpret() checks it too.
void checkInterpretable(const Graph &g);

/// Evaluates `g` on `inputs`, bound in declaration order; each input's shape and dtype must
/// equal the graph input's, else kfuse::Error naming the input. Returns one tensor per graph
/// output, in order. Works without recursion on graphs of any length and frees each
/// intermediate tensor once its last user has run.
std::vector<Tensor> interpret(const Graph &g, llvm::ArrayRef<Tensor> inputs);
/// The same, but the values of the nodes with ids in `stored` are also rounded to their
/// dtype where they are computed: the numbers a plan of several kernels gives, which stores
/// (and so rounds) every value that crosses from one kernel to another.
std::vector<Tensor> interpret(const Graph &g, llvm::ArrayRef<Tensor> inputs,
                              llvm::ArrayRef<unsigned> stored);

/// The scalar semantics of the elementwise ops in float64 (PyTorch's NaN rules: relu, max and
/// min propagate NaN). Throws kfuse::Error for an op that is not Unary / Binary.
double evalUnary(OpKind k, double x);
double evalBinary(OpKind k, double a, double b);

/// The value a scalar literal operand takes: its f32 value, as kernels hold literals as f32.
inline double literalValue(double v) { return static_cast<double>(static_cast<float>(v)); }

} // namespace kfuse
