#pragma once
/// A pass is a small named unit that rewrites a Graph in place and says whether it changed
/// anything. Every pass is declared once in passes/Passes.def; the classes below expand from
/// it, and each one is defined in its own file (Simplify.cpp, Cse.cpp, Dce.cpp, Fusion.cpp).
#include "ir/FusionDecision.h"
#include "ir/Graph.h"

#include <functional>
#include <string_view>

namespace kfuse {

struct FusionLog;

/// Whether the target's GEMM kernel computes the products of two sibling matmuls (the same
/// A, ir/KernelRegion.h's siblingMatmuls) in one kernel; the reason says why not. Codegen
/// knows (codegen::siblingGemmPolicy), so the driver hands it to the fusion pass.
using SiblingGemmPolicy = std::function<FusionDecision(const Node *, const Node *)>;

/// What a pass may need besides the graph. The fusion pass appends its decisions to
/// `fusionLog` when it is set, and fuses sibling matmuls only where `siblingGemm` allows.
struct PassContext {
  FusionLog *fusionLog = nullptr;
  SiblingGemmPolicy siblingGemm;
};

class Pass {
public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  /// Rewrites `g`; returns true when it changed anything.
  virtual bool run(Graph &g) = 0;
};

#define KF_PASS(passName, Class)                                                               \
  class Class final : public Pass {                                                            \
  public:                                                                                      \
    explicit Class(PassContext ctx = {}) : ctx_(ctx) {}                                        \
    std::string_view name() const override { return passName; }                                \
    bool run(Graph &g) override;                                                               \
                                                                                               \
  private:                                                                                     \
    [[maybe_unused]] PassContext ctx_;                                                         \
  };
#include "passes/Passes.def"

} // namespace kfuse
