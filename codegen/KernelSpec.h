#pragma once
/// KernelSpec: the plain value handed from a (fused) Graph to codegen. One spec per kernel:
/// its external input tensors, its elementwise ops in order (operands refer to inputs,
/// earlier ops or f32 literals), and the values it stores. Each input and output carries
/// its shape aligned to the kernel's iteration shape, so codegen broadcasts by index
/// arithmetic (stride 0 where a dim is 1) and never looks at the Graph again.
#include "codegen/GemmSpec.h"
#include "codegen/GemmTuning.h"
#include "codegen/ReduceSpec.h"
#include "ir/Graph.h"

#include <cstdint>
#include <optional>
#include <variant>
#include <string>
#include <vector>

namespace kfuse::codegen {

/// Where an op's operand comes from.
struct SpecRef {
  enum Kind : uint8_t { Input, Op, Literal } kind = Literal;
  unsigned index = 0;  ///< into KernelSpec::inputs or KernelSpec::ops
  float literal = 0.f; ///< the literal as f32 (kernels hold literals as f32)
};

struct SpecTensor {
  TensorType type;
  /// type.shape padded on the left with 1s to the rank of the iteration shape.
  Shape aligned;
  unsigned nodeId = 0; ///< the graph node this tensor is (for binding buffers)
  std::string name;    ///< that node's `.kf` name as the printer writes it (`%h`), for comments
  /// Whether `aligned` equals the iteration shape (read/written at the linear index).
  bool full = false;
};

struct SpecOp {
  OpKind kind = OpKind::Neg;
  DType dtype = DType::F32; ///< result dtype (cast rounds to it; otherwise math is f32)
  std::vector<SpecRef> args;
  unsigned nodeId = 0;
  /// The `.kf` text of the op, as the printer writes it (`%hb = add %h, %b`): generated code
  /// carries it as a comment on the statement that computes the op (codegen/LineComment.h).
  std::string text;
};

struct SpecOutput {
  SpecTensor tensor;
  unsigned op = 0; ///< the op whose value is stored
};

/// Launch shape of a kernel: a 3D grid of 3D blocks and its dynamic shared memory.
/// Elementwise kernels use x only; GEMM kernels put N tiles on x, M tiles on y, batches on z.
struct LaunchConfig {
  unsigned block = 256;
  uint64_t grid = 1;
  unsigned gridY = 1, gridZ = 1;
  unsigned blockY = 1, blockZ = 1;
  unsigned sharedBytes = 0; ///< dynamic; above 48 KB the runtime raises the function's limit
  /// The kernel loops over its work with a grid stride (elementwise and reduction kernels),
  /// so any grid of whole clusters computes the same result, and `grid` is an upper bound:
  /// the runtime launches at most the blocks the device holds at once for this function (its
  /// registers and shared memory, asked of the driver). A grid of more would run in waves,
  /// and a last, partial wave leaves most SMs idle or at part of their occupancy.
  bool gridStride = false;
  unsigned cluster = 1; ///< CTAs per thread-block cluster (the grid is a multiple of it)
  /// CTAs that wait on each other through global memory (a split reduction's CTAs of one
  /// row): the grid is a multiple of it, and a kernel with more than 1 is launched
  /// cooperatively, so that every CTA is resident at once (else a waiting CTA could hold the
  /// SM that the CTA it waits for needs).
  unsigned syncGroup = 1;
  bool cooperative() const { return syncGroup > 1; }
  /// The grid is a multiple of this: whole clusters and whole sync groups.
  unsigned gridMultiple() const { return cluster > syncGroup ? cluster : syncGroup; }
};

/// An elementwise kernel: every op over the iteration shape, one element per step.
struct Pointwise {};
using KernelKind = std::variant<Pointwise, GemmSpec, ReduceSpec>;
/// "pointwise", "reduce" or the GEMM kernel's name ("wgmma", "tensor-core", ...).
const char *kindName(const KernelKind &k);

struct KernelSpec {
  unsigned index = 0;
  std::string name;    ///< the user's name (region name, or the node's name when unfused)
  std::string mangled; ///< the C identifier of the __global__ function
  Shape iterShape;
  std::vector<SpecTensor> inputs;
  std::vector<SpecOp> ops;
  std::vector<SpecOutput> outputs;
  /// The kernel's kind, a closed set (codegen/KernelEmitter.h emits each): Pointwise, a
  /// GemmSpec when the region holds a matmul: then ops[0] is the matmul (args: inputs 0 and
  /// 1, its A and B, read only by the GEMM), for a dual GEMM ops[1] the sibling's product
  /// (inputs 0 and 2), and the other ops are its epilogue; or a
  /// ReduceSpec when it holds reductions (ops in program order; a per-row output's
  /// `aligned` shape is S with the reduced axes as 1s).
  KernelKind kind;
  /// The GEMM of a Gemm kernel, null for any other kind.
  const GemmSpec *gemm() const { return std::get_if<GemmSpec>(&kind); }
  GemmSpec *gemm() { return std::get_if<GemmSpec>(&kind); }
  /// The plan of a Reduce kernel, null for any other kind.
  const ReduceSpec *reduce() const { return std::get_if<ReduceSpec>(&kind); }

  int64_t numel() const { return numElements(iterShape); }
  /// Bytes the kernel moves: each input tensor read once, each output written once (the
  /// fused plan of the traffic model).
  int64_t bytesMoved() const;
  /// FLOPs: one per op per element.
  double flops() const;
  /// 64-bit indices only where the element count does not fit in int32.
  bool wide() const { return numel() >= (int64_t(1) << 31); }
  /// Elements per vector access: 16 bytes of the widest dtype among full tensors.
  unsigned vectorWidth() const;
  /// Grid for `block` threads per block: enough blocks for every element (counting the
  /// vector width), capped at `maxBlocks` (e.g. SMs * 8) for the grid-stride loop. A GEMM
  /// kernel ignores both: its launch follows from its tile.
  LaunchConfig launchConfig(unsigned block, uint64_t maxBlocks) const;
};

/// Builds one spec per kernel in an order where every kernel follows its producers. Nodes
/// with kernel() >= 0 form that region; any other non-input node is a kernel of its own.
/// A region holding a matmul becomes a GEMM kernel (its kernel chosen for `target`, or as
/// `tuning` measured it where that has the problem; f32 on TF32 tensor cores only where
/// `allowTf32`, the user's policy).
std::vector<KernelSpec> buildKernelSpecs(const Graph &g, const Target &target = {},
                                         const GemmTuning *tuning = nullptr,
                                         bool allowTf32 = false);

/// A C identifier made from any user string: [A-Za-z0-9] kept, everything else _XX hex.
std::string mangle(std::string_view s);

} // namespace kfuse::codegen
