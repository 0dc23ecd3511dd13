#include "codegen/GemmCodegen.h"

#include "codegen/CudaCodegen.h"
#include "codegen/DecodeGemm.h"
#include "codegen/Emitter.h"
#include "codegen/LineComment.h"
#include "codegen/ScalarExpr.h"
#include "ir/Error.h"

namespace kfuse::codegen {

static int dtCode(DType t) { return t == DType::F32 ? 0 : t == DType::F16 ? 1 : 2; }
static const char *storage(DType t) { return t == DType::F32 ? "float" : "unsigned short"; }

/// `expr` for the element offset of an operand's batch at output batch index `z` (its matrix
/// index with `unit` = the operand's matrix size).
static std::string batchOffset(const GemmSpec &s, const std::vector<int64_t> &stride,
                               int64_t unit = 1) {
  std::string sum;
  int64_t inner = 1;
  for (size_t j = s.batchShape.size(); j-- > 0;) {
    if (stride[j] != 0 && s.batchShape[j] != 1) {
      std::string c = inner == 1 ? "z" : fmt::format("(z / {}u)", inner);
      if (j != 0)
        c = fmt::format("({} % {}u)", c, s.batchShape[j]);
      sum += fmt::format("{}(unsigned long long){} * {}ull", sum.empty() ? "" : " + ", c,
                         stride[j] / unit);
    }
    inner *= s.batchShape[j];
  }
  return sum.empty() ? "0ull" : sum;
}

/// One output, full and 16-bit: the Hopper kernel stores it itself, row-contiguous through
/// shared memory (the functor's `staged`).
static bool epilogueStaged(const KernelSpec &k) {
  return k.outputs.size() == 1 && k.outputs[0].tensor.full &&
         k.outputs[0].tensor.type.dtype != DType::F32;
}

unsigned epilogueWeight(const KernelSpec &k) {
  unsigned w = 0;
  for (const SpecOp &op : k.ops)
    if (op.kind != OpKind::MatMul)
      w += opCodeWeight(op);
  return w;
}
// 48, from an A/B on an H100 (bench/results/models.md, 2026-12-07): the 20-op epilogue
// (weight 106) written out made a 268 KB cubin (a bare GEMM's: 62 KB) and took 4096^3 from
// 180 to 544 us; rolled, 391 us. GPT-2's gelu_new (tanh written out, weight 29) rolled made
// its GEMM 6.7% slower (50.8 -> 54.3 us at T = 1024), so it stays written out. Between the
// two the bound is not measured.
bool epilogueRolled(const KernelSpec &k) {
  return epilogueStaged(k) && !k.gemm()->dual && epilogueWeight(k) >= 48;
}

/// The epilogue functor `<mangled>_epi`: value(i, acc) computes element i of every full output
/// (`vals`; outputs smaller than the iteration space are stored by the element function itself),
/// store(i, v) stores them, operator() does both. Kernels compute a run of values before
/// storing any, so the epilogue's loads (bias, residual) are in flight together. Where the
/// kernel has one output, full and 16-bit, `staged` lets the Hopper kernel store its values
/// itself, row-contiguous through shared memory (out() is that output). The store lines name
/// the outputs they write.
static void emitEpilogueFunctor(Emitter &e, const KernelSpec &k, const std::string &args) {
  std::string fields;
  for (size_t j = 0; j < k.inputs.size(); ++j)
    fields += fmt::format("const {} *in{}; ", storage(k.inputs[j].type.dtype), j);
  for (size_t j = 0; j < k.outputs.size(); ++j)
    fields += fmt::format("{} *out{}; ", storage(k.outputs[j].tensor.type.dtype), j);
  std::string valFields, valArgs, valStores, stored;
  for (size_t j = 0; j < k.outputs.size(); ++j)
    if (k.outputs[j].tensor.full) {
      valFields += fmt::format(" {} r{};", storage(k.outputs[j].tensor.type.dtype), j);
      valArgs += fmt::format(", v.r{}", j);
      valStores += fmt::format(" out{}[i] = v.r{};", j, j);
      stored += (stored.empty() ? "output " : ", ") + k.outputs[j].tensor.name;
    }
  const bool staged = epilogueStaged(k);
  const char *idx = k.wide() ? "unsigned long long" : "unsigned";
  // A dual GEMM's epilogue takes both products of the element (acc2: the sibling's).
  const bool dual = k.gemm()->dual;
  const char *accs = dual ? "float acc, float acc2" : "float acc";
  const char *accArgs = dual ? "acc, acc2" : "acc";
  e.openScope("struct {}_epi", k.mangled);
  e.line("{}", fields.substr(0, fields.size() - 1));
  e.line("struct vals {{{} }};", valFields.empty() ? " char none;" : valFields);
  e.line("__device__ __forceinline__ vals value(unsigned long long i, {}) const {{ vals v; "
         "{}_elem(({})i, {}, {}{}); return v; }}",
         accs, k.mangled, idx, accArgs, args, valArgs);
  e.line("__device__ __forceinline__ void store(unsigned long long i, const vals &v) const {{{}{} "
         "}}{}",
         valStores.empty() ? " (void)i; (void)v;" : "", valStores, lineComment(stored));
  e.line("__device__ __forceinline__ void operator()(unsigned long long i, {}) const {{ "
         "store(i, value(i, {})); }}",
         accs, accArgs);
  e.line("__device__ __forceinline__ void prefetch(unsigned long long i) const {{ "
         "{}_prefetch(({})i, {}); }}",
         k.mangled, idx, args);
  e.line("static constexpr bool staged = {};", staged ? "true" : "false");
  e.line("static constexpr bool rolled = {}; // epilogue code weight {} (ScalarExpr.h)",
         epilogueRolled(k) ? "true" : "false", epilogueWeight(k));
  e.line("__device__ __forceinline__ unsigned short *out() const {{ return {}; }}{}",
         staged ? "out0" : "nullptr", staged ? lineComment(stored) : "");
  e.closeScope(";");
}

void emitGemmKernel(Emitter &e, const KernelSpec &k) {
  const GemmSpec &s = *k.gemm();
  emitElementFunction(e, k);
  e.blank();
  std::string args = kernelPointerArgs(k);
  e.line("// {}: {}", s.describe(), s.why);
  emitEpilogueFunctor(e, k, args);
  if (s.kernel == GemmKernel::Wgmma) // one block per SM: the register split needs them all
    e.openScope("extern \"C\" __global__ void __launch_bounds__({}, 1){} {}(const __grid_constant__ "
                "kf_tmap tmA, const __grid_constant__ kf_tmap tmB, {}{})",
                s.threads(),
                s.cluster > 1 ? fmt::format(" __cluster_dims__({}, 1, 1)", s.cluster) : std::string(),
                k.mangled, s.dual ? "const __grid_constant__ kf_tmap tmB2, " : "",
                kernelPointerParams(k));
  else
    e.openScope("extern \"C\" __global__ void __launch_bounds__({}){} {}({}{}{})", s.threads(),
                decodeKernelAttributes(s), k.mangled,
                s.tensorMaps() ? "const __grid_constant__ kf_tmap tmB, " : "",
                kernelPointerParams(k), s.streamK ? ", void *__restrict__ ws" : "");
  if (k.numel() == 0) { // nothing to compute (M, N or a batch dim is 0): never launched, and
    e.line("// no elements: the runtime never launches it"); // no template takes M = 0
    e.closeScope();
    return;
  }
  if (s.kernel == GemmKernel::Wgmma) { // A's and B's matrix (TMA coordinate) for batch z
    e.line("struct {}_z {{ __device__ __forceinline__ int2 operator()(unsigned z) const {{ return "
           "make_int2((int)({}), (int)({})); }} }};",
           k.mangled, batchOffset(s, s.strideA, s.M * s.K), batchOffset(s, s.strideB, s.K * s.N));
  } else {
    e.line("const unsigned z = blockIdx.z;");
  }
  e.line("const {}_epi epi{{{}}};", k.mangled, args);
  std::string ta = s.transA ? "true" : "false", tb = s.transB ? "true" : "false";
  std::string head = fmt::format("{}, {}, {}, {}, {}", dtCode(s.dtype), s.M, s.N, s.K, ta);
  std::string ops = fmt::format("in0 + ({}), in1 + ({}), (unsigned long long)z * {}ull, epi",
                                batchOffset(s, s.strideA), batchOffset(s, s.strideB), s.M * s.N);
  const std::string mm = lineComment(k.ops[0].text); // the call computes the matmul
  switch (s.kernel) {
  case GemmKernel::Wgmma:
    // Persistent (no blockIdx.z): the batch's A and B matrices from inside the tile loop.
    e.line("const {}_z zidx{{}};", k.mangled);
    e.line("kf_gemm_wg<{}, {}, {}, {}, {}, {}, {}, {}, {}, {}_epi, {}_z>(&tmA, &tmB, {}, zidx, "
           "epi);{}",
           head, tb, s.warpsM, s.bn, s.stages, s.batch(), s.pingpong ? "true" : "false", s.cluster,
           s.dual ? "true" : "false", k.mangled, k.mangled, s.dual ? "&tmB2" : "nullptr",
           s.dual ? lineComment(k.ops[0].text + "; " + k.ops[1].text) : mm);
    break;
  case GemmKernel::TensorCore:
    e.line("kf_gemm_tc<{}, {}, {}, {}, {}, {}, {}, {}, {}>({});{}", head, tb, s.bm, s.bn, s.bk,
           s.stages, s.warpsM, s.warpsN, k.mangled + "_epi", ops, mm); // DT 0: TF32
    break;
  case GemmKernel::Simt:
    e.line("kf_gemm_simt<{}, {}, {}, {}, {}, {}>({});{}", head, tb, s.bm, s.bn, s.bk,
           k.mangled + "_epi", ops, mm);
    break;
  case GemmKernel::Gemv:
    if (s.transB)
      e.line("kf_gemv_nk<{}, {}, {}, {}>({});{}", head, s.bn / s.warpsN, s.warpsN,
             k.mangled + "_epi", ops, mm);
    else
      e.line("kf_gemv_kn<{}, {}, {}, {}>({});{}", head, s.bn, s.threads(), k.mangled + "_epi", ops,
             mm);
    break;
  case GemmKernel::Decode: { // B's tensor map and its matrix for batch z, when B is by TMA
    std::string mapB = s.tensorMaps()
                           ? fmt::format("&tmB, (int)({})", batchOffset(s, s.strideB, s.K * s.N))
                           : std::string("nullptr, 0");
    std::string operands =
        fmt::format("in0 + ({}), in1 + ({}), {}, (unsigned long long)z * {}ull, epi",
                    batchOffset(s, s.strideA), batchOffset(s, s.strideB), mapB, s.M * s.N);
    e.line("{}{}", decodeGemmCall(s, head, k.mangled + "_epi", operands), mm);
    break;
  }
  }
  e.closeScope();
}

} // namespace kfuse::codegen
