#include "codegen/ReduceCodegen.h"

#include "codegen/Emitter.h"
#include "codegen/LineComment.h"
#include "codegen/ReduceCrossCta.h"
#include "codegen/ReduceIndex.h"
#include "codegen/ReduceStage.h"
#include "codegen/ScalarExpr.h"
#include "ir/Error.h"

#include <algorithm>

namespace kfuse::codegen {

namespace {

class ReduceWriter {
public:
  ReduceWriter(Emitter &e, const KernelSpec &k) : e_(e), k_(k), r_(*k.reduce()) {
    idx_ = k.wide() || r_.rows >= (int64_t(1) << 31) ? "unsigned long long" : "unsigned";
    suffix_ = idx_ == "unsigned" ? "u" : "ull";
    const size_t nin = k.inputs.size();
    access_.resize(nin);
    cached_.resize(nin);
    for (size_t j = 0; j < nin; ++j) {
      access_[j] = classify(k.inputs[j]);
      cached_[j] = r_.cache && access_[j] == Access::Contig && k.inputs[j].full;
    }
  }

  void write() {
    const unsigned T = r_.threads, R = r_.rowsPerBlock();
    const unsigned C = r_.cluster;
    const unsigned G = r_.split;
    e_.openScope("extern \"C\" __global__ void __launch_bounds__({}{}){} {}({}{})", r_.block,
                 r_.blocksPerSm > 1 ? fmt::format(", {}", r_.blocksPerSm) : std::string(),
                 C > 1 ? fmt::format(" __cluster_dims__({}, 1, 1)", C) : std::string(), k_.mangled,
                 kernelPointerParams(k_), G > 1 ? ", void *__restrict__ ws" : "");
    e_.line("// Rows of {} elements ({} rows), {} threads per row, {} rows per block{}.", r_.cols,
            r_.rows, T, R, r_.inner ? fmt::format(", {}-element vectors", r_.vec) : ", strided");
    if (unsigned n = sharedFloats())
      e_.line("__shared__ float red[{}];", n);
    if (r_.inner)
      e_.line("const unsigned l = threadIdx.x % {}u, r = threadIdx.x / {}u;", T, T);
    else
      e_.line("const unsigned r = threadIdx.x % {}u, l = threadIdx.x / {}u;", R, R);
    // The first row group of the CTA, and the step to its next one.
    std::string first, step;
    if (C > 1 || G > 1) {
      writeCrossCtaSetup(e_, r_);
      first = fmt::format("({})blockIdx.x / {}", idx_, lit(r_.ctasPerRow()));
      step = fmt::format("({})gridDim.x / {}", idx_, lit(r_.ctasPerRow()));
    } else {
      first = fmt::format("({})blockIdx.x * {}", idx_, lit(R));
      step = fmt::format("({})gridDim.x * {}", idx_, lit(R));
    }
    const StageNames names{idx_, suffix_};
    if (r_.stage)
      writeStageSetup(e_, k_, names, first);
    e_.openScope("for ({} base = {}; base < {}; base += {})", idx_, first, lit(r_.rows), step);
    e_.line("const {} m = base + r;", idx_);
    e_.line("const bool live = m < {};", lit(r_.rows));
    if (r_.stage)
      writeStageWait(e_);
    writeRowInputs();
    if (std::find(cached_.begin(), cached_.end(), true) != cached_.end())
      writeCacheLoads();
    if (r_.stage)
      writeStageNext(e_, k_, names, fmt::format("base + {}", step));
    for (unsigned p = 0; p <= r_.phases(); ++p) {
      if (p > 0)
        writePhase(p);
      writeRowOps(p);
    }
    writeEpilogue();
    writeRowOutputs();
    e_.closeScope();
    writeCrossCtaEnd(e_, r_);
    e_.closeScope();
  }

private:
  enum class Access { Row, Contig, Gather };

  /// Input j is cached as stored (16-bit values two to a register; ReduceSpec::packed): in
  /// a packed kernel every cached input, an f32 one copied by whole vectors.
  bool packed(size_t j) const { return cached_[j] && r_.packed; }
  /// The type cached input j is held as in its registers: as stored, or f32.
  DType cacheDType(size_t j) const { return packed(j) ? k_.inputs[j].type.dtype : DType::F32; }

  static constexpr unsigned kWholeUnrollSteps = 8;

  std::string lit(int64_t v) const { return fmt::format("{}{}", v, suffix_); }

  Access classify(const SpecTensor &t) const {
    bool allOne = true, contig = true;
    for (size_t d = 0; d < t.aligned.size(); ++d)
      if (r_.mask[d] && k_.iterShape[d] != 1) {
        allOne &= t.aligned[d] == 1;
        contig &= t.aligned[d] == k_.iterShape[d];
      }
    if (allOne)
      return Access::Row;
    return r_.inner && contig ? Access::Contig : Access::Gather;
  }

  std::string offset(const SpecTensor &t, bool reduced, const std::string &var) const {
    return reduceOffset(k_.iterShape, r_.mask, t, reduced, var, suffix_);
  }

  /// Shared memory for the combine across warps (inner, more than 32 threads per row) or
  /// across a strided row's lanes: one slot per accumulator, row and slot.
  unsigned slots() const { return r_.inner ? (r_.threads > 32 ? r_.threads / 32 : 0) : r_.threads; }
  unsigned sharedFloats() const { return slots() * r_.rowsPerBlock() * r_.phaseReductions; }
  std::vector<unsigned> reductionsOf(unsigned p) const {
    std::vector<unsigned> out;
    for (unsigned i = 0; i < k_.ops.size(); ++i)
      if (isReduction(k_.ops[i].kind) && r_.phase[i] == p)
        out.push_back(i);
    return out;
  }

  /// A value this kernel stores in f16/bf16 and reads again is rounded where it is made, so
  /// that every reader sees the stored tensor's numbers (as the elementwise kernels do).
  bool stored16(unsigned oi) const {
    bool stored = false, readLater = false;
    for (const SpecOutput &o : k_.outputs)
      stored |= o.op == oi && o.tensor.type.dtype != DType::F32;
    for (size_t later = oi + 1; later < k_.ops.size() && !readLater; ++later)
      for (const SpecRef &a : k_.ops[later].args)
        readLater |= a.kind == SpecRef::Op && a.index == oi;
    return stored && readLater;
  }

  /// Inputs that are one value per row, and the row offsets of gathered inputs: once a row.
  void writeRowInputs() {
    for (size_t j = 0; j < k_.inputs.size(); ++j) {
      const SpecTensor &t = k_.inputs[j];
      if (access_[j] == Access::Row)
        e_.line("const float h{} = live ? {} : 0.0f;{}", j,
                loadExpr(t.type.dtype, fmt::format("in{}[{}]", j, offset(t, false, "m"))),
                lineComment(t.name));
      if (access_[j] == Access::Row)
        writeReciprocal(SpecRef{SpecRef::Input, static_cast<unsigned>(j)});
      else if (access_[j] == Access::Gather)
        e_.line("const {} o{} = {};", idx_, j, offset(t, false, "m"));
    }
  }

  /// Loads of vector step `jv` of every contiguous input `used` into v<j>[], as stored.
  /// Only the cached inputs when `fillCache`, only the others otherwise.
  void writeVectorLoads(const std::vector<bool> &used, const std::string &n0, bool fillCache) {
    for (size_t j = 0; j < k_.inputs.size(); ++j) {
      if (access_[j] != Access::Contig || !used[j] || (cached_[j] != fillCache))
        continue;
      const SpecTensor &t = k_.inputs[j];
      size_t bytes = r_.vec * dtypeSize(t.type.dtype);
      e_.line("alignas(16) {} v{}[{}];", storageType(t.type.dtype), j, r_.vec);
      std::string src = fillCache && r_.stage
                            ? stagedVector(k_, j, "q0")
                            : fmt::format("in{} + ({}) + {}", j, offset(t, false, "m"), n0);
      e_.line("*reinterpret_cast<{} *>(v{}) = *reinterpret_cast<const {} *>({});", vecType(bytes),
              j, vecType(bytes), src);
    }
  }

  /// `for (s ...) { n0 = ...; if (live && in the CTA's share) {`: vector step s of the
  /// thread's elements of the row, n0 its first element's index in the row.
  void openStep() { openStepWithGuard("live"); }

  void openStepWithGuard(const std::string &guard) {
    // Unrolled whole where the steps index the register cache (constant indices keep it in
    // registers) or are few; otherwise by 4, four vector loads in flight per thread: a
    // whole unroll of an uncached row of 2^20 (128 steps, three passes) took NVRTC 6.6 s
    // and a 491 KB cubin.
    if (r_.cache || r_.steps <= kWholeUnrollSteps)
      e_.line("#pragma unroll");
    else
      e_.line("#pragma unroll 4");
    e_.openScope("for (unsigned s = 0; s < {}u; ++s)", r_.steps);
    e_.line("const {0} q0 = (({0})s * {1} + l) * {2};", idx_, lit(r_.threads), lit(r_.vec));
    if (r_.ctasPerRow() > 1)
      e_.line("const {0} n0 = ({0})rank * {1} + q0;", idx_, lit(r_.colsPerCta()));
    else
      e_.line("const {} n0 = q0;", idx_);
    // A split row's last share may be shorter than the others.
    bool ragged = r_.colsPerCta() * r_.ctasPerRow() != r_.cols;
    e_.openScope("if ({}q0 < {}{})", guard.empty() ? "" : guard + " && ", lit(r_.colsPerCta()),
                 ragged ? fmt::format(" && n0 < {}", lit(r_.cols)) : std::string());
  }

  void writeCacheLoads() {
    e_.line("// The row's contiguous inputs, in registers for every phase{}.",
            r_.packed ? " (16-bit ones as stored)" : "");
    std::vector<bool> all(k_.inputs.size(), true);
    for (size_t j = 0; j < k_.inputs.size(); ++j)
      if (cached_[j])
        e_.line("{}{} c{}[{}];", packed(j) ? "alignas(16) " : "", storageType(cacheDType(j)), j,
                r_.steps * r_.vec);
    openStep();
    writeVectorLoads(all, "n0", true);
    for (size_t j = 0; j < k_.inputs.size(); ++j) {
      if (!cached_[j])
        continue;
      if (packed(j)) {
        const char *vt = vecType(r_.vec * dtypeSize(k_.inputs[j].type.dtype));
        e_.line("*reinterpret_cast<{} *>(c{} + s * {}u) = *reinterpret_cast<const {} *>(v{});", vt,
                j, r_.vec, vt, j);
      } else {
        e_.line("for (unsigned v = 0; v < {}u; ++v) c{}[s * {}u + v] = {};", r_.vec, j, r_.vec,
                loadExpr(k_.inputs[j].type.dtype, fmt::format("v{}[v]", j)));
      }
    }
    e_.closeScope();
    e_.closeScope();
    if (r_.cluster > 1 && !r_.stage)
      writeNextRowPrefetch();
  }

  /// A cluster works on one row at a time, and between its loads and its stores come the
  /// cluster barriers of every phase, with no other row's loads in flight. So the CTA
  /// prefetches its share of the next row it will take into L2 (one prefetch per 128-byte
  /// line of each cached input) while this row's phases run: those loads then hit L2.
  void writeNextRowPrefetch() {
    e_.line("// The CTA's share of its next row into L2, while this row's phases run.");
    e_.line("const {0} mn = m + ({0})gridDim.x / {1};", idx_, lit(r_.cluster));
    e_.openScope("if (mn < {})", lit(r_.rows));
    openStepWithGuard("");
    for (size_t j = 0; j < k_.inputs.size(); ++j) {
      if (access_[j] != Access::Contig || !cached_[j])
        continue;
      const SpecTensor &t = k_.inputs[j];
      unsigned vecBytes = r_.vec * static_cast<unsigned>(dtypeSize(t.type.dtype));
      unsigned perLine = std::max(1u, 128u / std::max(1u, vecBytes));
      e_.line("if (l % {}u == 0) kf_prefetch_l2(in{} + ({}) + n0);", perLine, j,
              offset(t, false, "mn"));
    }
    e_.closeScope();
    e_.closeScope();
    e_.closeScope();
  }

  /// The element ops (not per row) that `roots` need, in program order.
  std::vector<bool> elementClosure(const std::vector<unsigned> &roots) const {
    std::vector<bool> need(k_.ops.size(), false);
    std::vector<unsigned> stack(roots.begin(), roots.end());
    while (!stack.empty()) {
      unsigned i = stack.back();
      stack.pop_back();
      for (const SpecRef &a : k_.ops[i].args)
        if (a.kind == SpecRef::Op && !r_.rowOp[a.index] && !need[a.index]) {
          need[a.index] = true;
          stack.push_back(a.index);
        }
    }
    return need;
  }

  std::string arg(const SpecRef &a) const {
    switch (a.kind) {
    case SpecRef::Input:
      return access_[a.index] == Access::Row ? fmt::format("h{}", a.index)
                                             : fmt::format("e{}", a.index);
    case SpecRef::Op:
      return fmt::format("t{}", a.index);
    case SpecRef::Literal:
      return floatLiteral(a.literal);
    }
    return "";
  }

  /// Whether `a` is one value per row (a per-row op or input).
  bool perRow(const SpecRef &a) const {
    return (a.kind == SpecRef::Op && r_.rowOp[a.index]) ||
           (a.kind == SpecRef::Input && access_[a.index] == Access::Row);
  }

  /// Whether some element op divides by the per-row value `a`: such a division is a
  /// multiply by the row's reciprocal, computed once per row (softmax's e / sum(e): an IEEE
  /// division per element made softmax compute-bound on the H200). x * (1 / s) is within
  /// 1.5 ulp of x / s in f32 (the same as Triton's default division).
  bool rowDivisor(const SpecRef &a) const {
    if (!perRow(a))
      return false;
    for (size_t i = 0; i < k_.ops.size(); ++i)
      if (!r_.rowOp[i] && k_.ops[i].kind == OpKind::Div && k_.ops[i].args[1].kind == a.kind &&
          k_.ops[i].args[1].index == a.index)
        return true;
    return false;
  }

  /// `const float q<name> = 1.0f / <name>;` after a per-row value that a division needs.
  void writeReciprocal(const SpecRef &a) {
    if (rowDivisor(a))
      e_.line("const float q{0} = 1.0f / {0};", arg(a));
  }

  /// `const float t<i> = ...;` for op i.
  void writeOp(unsigned i) {
    const SpecOp &op = k_.ops[i];
    std::vector<std::string> a;
    for (const SpecRef &x : op.args)
      a.push_back(arg(x));
    std::string expr = op.kind == OpKind::Div && !r_.rowOp[i] && perRow(op.args[1])
                           ? fmt::format("{} * q{}", a[0], a[1])
                           : opExpr(op, a, k_.name);
    if (stored16(i))
      expr = loadExpr(op.dtype, storeExpr(op.dtype, expr));
    e_.line("const float t{} = {};{}", i, expr, lineComment(op.text));
    if (r_.rowOp[i])
      writeReciprocal(SpecRef{SpecRef::Op, i});
  }

  /// A loop over the thread's elements of the row; the body computes the element values
  /// `need` from e<j> (each input's value at the element) and then runs `body`.
  template <typename Body>
  void forEachElement(const std::vector<bool> &need, const std::vector<unsigned> &roots,
                      Body body) {
    std::vector<bool> used(k_.inputs.size(), false);
    for (size_t i = 0; i < k_.ops.size(); ++i)
      if (need[i] || std::find(roots.begin(), roots.end(), i) != roots.end())
        for (const SpecRef &a : k_.ops[i].args)
          if (a.kind == SpecRef::Input)
            used[a.index] = true;
    auto element = [&](const std::string &n, const std::string &vi, const std::string &ci) {
      for (size_t j = 0; j < k_.inputs.size(); ++j) {
        if (!used[j] || access_[j] == Access::Row)
          continue;
        const SpecTensor &t = k_.inputs[j];
        std::string v =
            access_[j] == Access::Gather
                ? loadExpr(t.type.dtype, fmt::format("in{}[o{} + {}]", j, j, offset(t, true, n)))
            : cached_[j] ? loadExpr(cacheDType(j), fmt::format("c{}[{}]", j, ci))
                         : loadExpr(t.type.dtype, fmt::format("v{}[{}]", j, vi));
        e_.line("const float e{} = {};{}", j, v, lineComment(t.name));
      }
      for (unsigned i = 0; i < k_.ops.size(); ++i)
        if (need[i])
          writeOp(i);
      body(n, vi);
    };
    if (r_.inner) {
      openStep();
      writeVectorLoads(used, "n0", false);
      body.prologue();
      e_.line("#pragma unroll");
      e_.openScope("for (unsigned v = 0; v < {}u; ++v)", r_.vec);
      e_.line("const {} n = n0 + v;", idx_);
      e_.line("(void)n;");
      element("n", "v", fmt::format("s * {}u + v", r_.vec));
      e_.closeScope();
      body.epilogue();
      e_.closeScope();
      e_.closeScope();
    } else {
      e_.openScope("for ({0} n = l; n < {1}; n += {2})", idx_, lit(r_.cols), lit(r_.threads));
      e_.openScope("if (live)");
      element("n", "0", "0");
      e_.closeScope();
      e_.closeScope();
    }
  }

  struct NoVector {
    void prologue() {}
    void epilogue() {}
  };

  void writePhase(unsigned p) {
    std::vector<unsigned> reds = reductionsOf(p);
    e_.line("// Phase {}: {} reduction{} over the row.", p, reds.size(),
            reds.size() == 1 ? "" : "s");
    for (unsigned i : reds)
      e_.line("float a{} = {};", i,
              floatLiteral(static_cast<float>(reductionIdentity(k_.ops[i].kind))));
    std::vector<bool> need = elementClosure(reds);
    struct Body : NoVector {
      ReduceWriter *w;
      std::vector<unsigned> reds;
      void operator()(const std::string &, const std::string &) {
        for (unsigned i : reds)
          w->e_.line("a{} = {};", i,
                     partialCombine(w->k_.ops[i].kind, fmt::format("a{}", i),
                                    w->arg(w->k_.ops[i].args[0])));
      }
    } body;
    body.w = this;
    body.reds = reds;
    forEachElement(need, reds, body);
    // Across the row's threads: warp shuffles, then shared memory, in a fixed order.
    const unsigned S = slots(), R = r_.rowsPerBlock();
    if (r_.inner)
      for (unsigned i : reds)
        e_.line("a{0} = kf_warp_{1}<{2}>(a{0});", i, partialCombineName(k_.ops[i].kind),
                std::min(r_.threads, 32u));
    if (S > 1) {
      std::string slot = r_.inner ? "l / 32u" : "l";
      if (r_.inner)
        e_.openScope("if (l % 32u == 0)");
      else
        e_.openScope("");
      for (size_t q = 0; q < reds.size(); ++q)
        e_.line("red[({}u * {}u + r) * {}u + {}] = a{};", q, R, S, slot, reds[q]);
      e_.closeScope();
      e_.line("__syncthreads();");
      for (size_t q = 0; q < reds.size(); ++q) {
        unsigned i = reds[q];
        e_.line("a{} = red[({}u * {}u + r) * {}u];", i, q, R, S);
        e_.line("for (unsigned s = 1; s < {}u; ++s) a{} = {};", S, i,
                partialCombine(k_.ops[i].kind, fmt::format("a{}", i),
                               fmt::format("red[({}u * {}u + r) * {}u + s]", q, R, S)));
      }
      e_.line("__syncthreads();");
    }
    std::vector<RowPartial> parts;
    for (unsigned i : reds)
      parts.push_back(RowPartial{fmt::format("a{}", i), k_.ops[i].kind});
    writeCrossCtaCombine(e_, r_, parts);
    for (unsigned i : reds) {
      std::string v = k_.ops[i].kind == OpKind::Mean
                          ? fmt::format("a{} / {}", i, floatLiteral(static_cast<float>(r_.cols)))
                          : fmt::format("a{}", i);
      if (stored16(i))
        v = loadExpr(k_.ops[i].dtype, storeExpr(k_.ops[i].dtype, v));
      e_.line("const float t{} = {};{}", i, v, lineComment(k_.ops[i].text));
      writeReciprocal(SpecRef{SpecRef::Op, i});
    }
  }

  /// The per-row ops (not reductions) known after phase p.
  void writeRowOps(unsigned p) {
    for (unsigned i = 0; i < k_.ops.size(); ++i)
      if (r_.rowOp[i] && !isReduction(k_.ops[i].kind) && r_.phase[i] == p)
        writeOp(i);
  }

  /// The values over S that leave the kernel.
  void writeEpilogue() {
    std::vector<unsigned> outs;
    for (const SpecOutput &o : k_.outputs)
      if (!r_.rowOp[o.op])
        outs.push_back(o.op);
    if (outs.empty())
      return;
    e_.line("// The outputs over the whole shape.");
    std::vector<bool> need = elementClosure(outs);
    for (unsigned i : outs)
      need[i] = true;
    struct Body {
      ReduceWriter *w;
      void prologue() {
        for (size_t j = 0; j < w->k_.outputs.size(); ++j)
          if (!w->r_.rowOp[w->k_.outputs[j].op])
            w->e_.line("alignas(16) {} s{}[{}];", storageType(w->k_.outputs[j].tensor.type.dtype),
                       j, w->r_.vec);
      }
      void operator()(const std::string &n, const std::string &vi) {
        for (size_t j = 0; j < w->k_.outputs.size(); ++j) {
          const SpecOutput &o = w->k_.outputs[j];
          if (w->r_.rowOp[o.op])
            continue;
          std::string v = storeExpr(o.tensor.type.dtype, fmt::format("t{}", o.op));
          if (w->r_.inner)
            w->e_.line("s{}[{}] = {};", j, vi, v);
          else
            w->e_.line("out{}[{} + {}] = {};", j, w->offset(o.tensor, false, "m"),
                       w->offset(o.tensor, true, n), v);
        }
      }
      void epilogue() {
        for (size_t j = 0; j < w->k_.outputs.size(); ++j) {
          const SpecOutput &o = w->k_.outputs[j];
          if (w->r_.rowOp[o.op])
            continue;
          size_t bytes = w->r_.vec * dtypeSize(o.tensor.type.dtype);
          w->e_.line(
              "*reinterpret_cast<{} *>(out{} + ({}) + n0) = *reinterpret_cast<const {} *>(s{});",
              vecType(bytes), j, w->offset(o.tensor, false, "m"), vecType(bytes), j);
        }
      }
    } body{this};
    forEachElement(need, outs, body);
  }

  void writeRowOutputs() {
    bool any = false;
    for (const SpecOutput &o : k_.outputs)
      any |= r_.rowOp[o.op];
    if (!any)
      return;
    e_.openScope("if (live && l == 0{})", r_.ctasPerRow() > 1 ? " && rank == 0" : "");
    for (size_t j = 0; j < k_.outputs.size(); ++j) {
      const SpecOutput &o = k_.outputs[j];
      if (r_.rowOp[o.op])
        e_.line("out{}[{}] = {};{}", j, offset(o.tensor, false, "m"),
                storeExpr(o.tensor.type.dtype, fmt::format("t{}", o.op)),
                lineComment("output " + o.tensor.name));
    }
    e_.closeScope();
  }

  Emitter &e_;
  const KernelSpec &k_;
  const ReduceSpec &r_;
  std::string idx_, suffix_;
  std::vector<Access> access_;
  std::vector<bool> cached_; ///< input j is held in registers (c<j>)
};

} // namespace

void emitReduceKernel(Emitter &e, const KernelSpec &k) { ReduceWriter(e, k).write(); }

} // namespace kfuse::codegen
