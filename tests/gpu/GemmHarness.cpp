// The GEMM GPU tests' harness (GemmHarness.h).
#include "GemmHarness.h"

#include <catch2/catch.hpp> // WARN

#include "codegen/GemmTuning.h"
#include "codegen/KernelSpec.h"
#include "ir/Builder.h"
#include "ir/Compare.h"
#include "ir/Error.h"
#include "ir/ErrorBound.h"
#include "ir/Interpreter.h"
#include "ir/Parser.h"
#include "passes/Fusion.h"
#include "passes/PassManager.h"
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>

using kfuse::runtime::Driver;

namespace kfuse::gputest {

/// Raw device-layout bytes of a tensor with random values in [-2, 2] of its dtype (fast
/// enough for the 1e9-element example graph).

Raw randomRaw(const TensorType &t, uint64_t seed) {
  Raw r{t, std::vector<unsigned char>(t.bytes())};
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  int64_t n = t.numElements();
  for (int64_t i = 0; i < n; ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    float f = static_cast<float>((s >> 40) * (4.0 / double(1ull << 24)) - 2.0);
    if (t.dtype == DType::F32) {
      std::memcpy(&r.bytes[i * 4], &f, 4);
    } else {
      uint16_t h = t.dtype == DType::F16 ? floatToHalfBits(f) : floatToBF16Bits(f);
      std::memcpy(&r.bytes[i * 2], &h, 2);
    }
  }
  return r;
}

DeviceBuffer uploadRaw(const Raw &r) {
  Driver &d = Driver::require();
  DeviceBuffer b(r.bytes.size());
  if (!r.bytes.empty())
    d.check(d.cuMemcpyHtoD_v2(b.ptr(), r.bytes.data(), r.bytes.size()), "cuMemcpyHtoD");
  return b;
}

Raw downloadRaw(const TensorType &t, const DeviceBuffer &b) {
  Driver &d = Driver::require();
  Raw r{t, std::vector<unsigned char>(t.bytes())};
  if (!r.bytes.empty())
    d.check(d.cuMemcpyDtoH_v2(r.bytes.data(), b.ptr(), r.bytes.size()), "cuMemcpyDtoH");
  return r;
}

/// The largest K of any matmul in `g` (0 without one).
int64_t maxK(const Graph &g) {
  int64_t k = 0;
  for (const Node *n : g.nodes())
    if (n->kind() == OpKind::MatMul) {
      const Node *a = n->operand(0).node;
      k = std::max(k,
                   n->matmulAttrs().transA ? a->shape()[a->shape().size() - 2] : a->shape().back());
    }
  return k;
}

/// Per element: |got - ref| <= one ulp of the output dtype relative to |ref| (the f32 and
/// float64 values may round to neighbours) + 2^-20 * K for the f32 sum of K products of
/// values in [-2, 2] (random-walk rounding of partial sums of size ~sqrt(K)) + a tiny
/// absolute floor. NaN never passes; an unwritten (poisoned) element is NaN.
std::string checkClose(DType t, double got, double ref, int64_t K, int64_t index) {
  double ulp = t == DType::F32 ? 0x1p-22 : t == DType::F16 ? 0x1p-10 : 0x1p-7;
  double tol = ulp * std::fabs(ref) + 0x1p-20 * double(K) + (t == DType::F32 ? 1e-6 : 1e-4);
  if (std::isnan(ref) != std::isnan(got) || (!std::isnan(ref) && std::fabs(got - ref) > tol))
    return fmt::format("element {}: got {} where the reference is {} (tolerance {})", index, got,
                       ref, tol);
  return "";
}

/// float64 value of node `n` at multi-index `idx` (aligned to n's shape), following the
/// interpreter's rules: inputs as bound, literals as f32, casts round, f64 in between.
static int64_t linearIndex(const Shape &s, const std::vector<int64_t> &idx) {
  int64_t i = 0;
  for (size_t d = 0; d < s.size(); ++d)
    i = i * s[d] + idx[d];
  return i;
}

/// Ids of the values the kernels store: they round them, and every later reader (another
/// kernel or an op after it in the same kernel) reads the rounded value.
std::vector<unsigned> storedIds(const RunResultSpecs &specs) {
  std::vector<unsigned> ids;
  for (const codegen::KernelSpec &k : specs)
    for (const codegen::SpecOutput &o : k.outputs)
      ids.push_back(o.tensor.nodeId);
  return ids;
}

/// The dtype whose tolerance an output gets: its own, or a coarser one the kernels stored
/// on the way (float64 and f32 math can round a stored value to neighbouring steps).
DType checkDType(DType out, const RunResultSpecs &specs) {
  DType d = out;
  for (const codegen::KernelSpec &k : specs)
    for (const codegen::SpecOutput &o : k.outputs)
      d = coarserDType(d, o.tensor.type.dtype);
  return d;
}

static double pointEvalExact(const Node *n, const std::vector<int64_t> &idx,
                      const std::vector<const Raw *> &inputOf, const std::vector<unsigned> &stored);

double pointEval(const Node *n, const std::vector<int64_t> &idx,
                 const std::vector<const Raw *> &inputOf, const std::vector<unsigned> &stored) {
  double v = pointEvalExact(n, idx, inputOf, stored);
  bool isStored = std::find(stored.begin(), stored.end(), n->id()) != stored.end();
  return isStored && !n->isInput() ? roundToDType(v, n->dtype()) : v;
}

static double pointEvalExact(const Node *n, const std::vector<int64_t> &idx,
                      const std::vector<const Raw *> &inputOf,
                      const std::vector<unsigned> &stored) {
  if (n->isInput())
    return inputOf[n->id()]->at(linearIndex(n->shape(), idx));
  auto operandAt = [&](const Operand &o) -> double {
    if (o.isScalar())
      return literalValue(o.scalar);
    const Shape &s = o.node->shape();
    std::vector<int64_t> sub(idx.end() - s.size(), idx.end());
    for (size_t d = 0; d < s.size(); ++d)
      if (s[d] == 1)
        sub[d] = 0;
    return pointEval(o.node, sub, inputOf, stored);
  };
  switch (opClass(n->kind())) {
  case OpClass::Unary:
    return evalUnary(n->kind(), operandAt(n->operand(0)));
  case OpClass::Binary:
    return evalBinary(n->kind(), operandAt(n->operand(0)), operandAt(n->operand(1)));
  case OpClass::Cast:
    return roundToDType(operandAt(n->operand(0)), n->dtype());
  case OpClass::Contraction: {
    const Node *a = n->operand(0).node, *b = n->operand(1).node;
    bool ta = n->matmulAttrs().transA, tb = n->matmulAttrs().transB;
    int64_t K = ta ? a->shape()[a->shape().size() - 2] : a->shape().back();
    size_t r = idx.size();
    auto sub = [&](const Node *x, int64_t row, int64_t col) {
      std::vector<int64_t> s(idx.end() - x->shape().size(), idx.end());
      for (size_t d = 0; d + 2 < x->shape().size(); ++d)
        if (x->shape()[d] == 1)
          s[d] = 0;
      s[x->shape().size() - 2] = row;
      s[x->shape().size() - 1] = col;
      return s;
    };
    double sum = 0;
    for (int64_t k = 0; k < K; ++k) {
      double va = pointEval(a, ta ? sub(a, k, idx[r - 2]) : sub(a, idx[r - 2], k), inputOf, stored);
      double vb = pointEval(b, tb ? sub(b, idx[r - 1], k) : sub(b, k, idx[r - 1]), inputOf, stored);
      sum += va * vb;
    }
    return sum;
  }
  default:
    fail("pointEval: op '{}'", opName(n->kind()));
  }
}


/// Whether `d` runs the sm_90a wgmma kernels (compute capability 9.0 exactly); warns if not.
bool wgmmaDevice(const Driver &d) {
  if (d.ccMajor == 9 && d.ccMinor == 0)
    return true;
  WARN("wgmma needs compute capability 9.0; this device is " << d.arch());
  return false;
}

/// Runs `g` with random inputs and poisoned outputs; `graphReplay` runs it as a CUDA graph;
/// `archSpecific` false keeps to portable kernels (mma.sync instead of sm_90a's wgmma);
/// `tuning` picks GEMM configurations as an autotuned choice would.
RunResult runOnGpu(const Graph &g, uint64_t seed, bool graphReplay, bool archSpecific,
                   const codegen::GemmTuning *tuning, bool allowTf32, unsigned launches) {
  Driver &d = Driver::require();
  RunResult r;
  std::vector<DeviceBuffer> inBuf, outBuf;
  std::vector<CUdeviceptr> inPtr, outPtr;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    r.inputs.push_back(randomRaw(g.inputs()[i]->type(), seed * 131 + i));
    inBuf.push_back(uploadRaw(r.inputs.back()));
    inPtr.push_back(inBuf.back().ptr());
  }
  for (const Node *o : g.outputs()) {
    outBuf.emplace_back(o->type().bytes());
    poison(outBuf.back());
    outPtr.push_back(outBuf.back().ptr());
  }
  compiler::CompileOptions options;
  options.target.archSpecific = archSpecific;
  options.allowTf32 = allowTf32;
  options.tuning = tuning;
  runtime::Executable exe(d, runtime::compileAsGiven(d, g, options));
  if (graphReplay)
    exe.captureGraph(inPtr, outPtr);
  for (unsigned i = 0; i < launches; ++i) {
    if (i > 0)
      for (DeviceBuffer &b : outBuf)
        poison(b);
    if (graphReplay)
      exe.replay(nullptr);
    else
      exe.launch(inPtr, outPtr, nullptr);
    d.check(d.cuCtxSynchronize(), "running the kernels");
  }
  for (size_t j = 0; j < g.outputs().size(); ++j)
    r.outputs.push_back(downloadRaw(g.outputs()[j]->type(), outBuf[j]));
  r.specs = exe.specs();
  return r;
}

/// Device-layout tensors as the interpreter's (float64 values).
static std::vector<Tensor> toTensors(const std::vector<Raw> &raws) {
  std::vector<Tensor> out;
  for (const Raw &x : raws) {
    Tensor t(x.type);
    for (int64_t i = 0; i < t.numElements(); ++i)
      t.data[i] = x.at(i);
    out.push_back(std::move(t));
  }
  return out;
}

/// The interpreter's outputs of `g` on the inputs of run `r`, rounding what r's kernels store.
std::vector<Tensor> referenceOf(const Graph &g, const RunResult &r) {
  return interpret(g, toTensors(r.inputs), storedIds(r.specs));
}

/// Every element against the interpreter.
std::string checkWithInterpreter(const Graph &g, const RunResult &r, size_t outputs) {
  std::vector<Tensor> ref = referenceOf(g, r);
  int64_t K = maxK(g);
  for (size_t j = 0; j < std::min(ref.size(), outputs); ++j)
    for (int64_t i = 0; i < ref[j].numElements(); ++i)
      if (std::string m = checkClose(checkDType(ref[j].dtype(), r.specs), r.outputs[j].at(i),
                                     ref[j].data[i], K, i);
          !m.empty())
        return fmt::format("output {} {}: {}", j, ref[j].type.str(), m);
  return "";
}

std::string checkWithErrorBound(const Graph &g, const RunResult &r) {
  return checkOutputs(g, toTensors(r.inputs), toTensors(r.outputs), storedIds(r.specs));
}

/// `samples` elements per output (the first, the last and random ones) by pointEval.
std::string checkSampled(const Graph &g, const RunResult &r, int samples, uint64_t seed) {
  std::vector<const Raw *> inputOf(g.nodes().size() + 1, nullptr);
  size_t maxId = 0;
  for (const Node *n : g.nodes())
    maxId = std::max<size_t>(maxId, n->id());
  inputOf.assign(maxId + 1, nullptr);
  for (size_t i = 0; i < g.inputs().size(); ++i)
    inputOf[g.inputs()[i]->id()] = &r.inputs[i];
  std::mt19937_64 rng(seed);
  int64_t K = maxK(g);
  for (size_t j = 0; j < g.outputs().size(); ++j) {
    const Node *o = g.outputs()[j];
    int64_t n = o->type().numElements();
    if (n == 0)
      continue;
    for (int s = 0; s < samples; ++s) {
      int64_t i = s == 0 ? 0 : s == 1 ? n - 1 : static_cast<int64_t>(rng() % uint64_t(n));
      std::vector<int64_t> idx(o->shape().size());
      for (int64_t rem = i, d = int64_t(o->shape().size()) - 1; d >= 0; --d) {
        idx[d] = rem % o->shape()[d];
        rem /= o->shape()[d];
      }
      double ref = roundToDType(pointEval(o, idx, inputOf, storedIds(r.specs)), o->dtype());
      if (std::string m =
              checkClose(checkDType(o->dtype(), r.specs), r.outputs[j].at(i), ref, K, i);
          !m.empty())
        return fmt::format("output {} {}: {}", j, o->type().str(), m);
    }
  }
  return "";
}


/// matmul (+ epilogue) over the given shapes, fused into one kernel by the fusion pass.
std::unique_ptr<Graph> gemmGraph(DType t, Shape sa, Shape sb, MatMulAttrs attrs, Epi epi) {
  auto g = std::make_unique<Graph>("gemm");
  Value a = g->input("a", t, sa);
  Value b = g->input("b", t, sb);
  Value h = matmul(a, b, attrs);
  const Shape &so = h->shape();
  int64_t M = so[so.size() - 2], N = so.back();
  Value y = h;
  switch (epi) {
  case Epi::None:
    break;
  case Epi::Bias:
    y = h + g->input("bias", t, {N});
    break;
  case Epi::BiasRelu:
    y = relu(h + g->input("bias", t, {N}));
    break;
  case Epi::ResidualGelu:
    y = gelu(h * 0.5 + g->input("res", t, so));
    break;
  case Epi::ScaleCast:
    y = cast(h * 0.125, DType::F32);
    break;
  case Epi::RowBiasSilu:
    y = silu(h - g->input("rowb", t, {M, 1}));
    break;
  }
  g->output(y);
  fuseGraph(*g);
  return g;
}

const char *epiName(Epi e) {
  switch (e) {
  case Epi::None:
    return "none";
  case Epi::Bias:
    return "bias";
  case Epi::BiasRelu:
    return "bias+relu";
  case Epi::ResidualGelu:
    return "residual+gelu";
  case Epi::ScaleCast:
    return "scale+cast";
  case Epi::RowBiasSilu:
    return "rowbias+silu";
  }
  return "?";
}

std::string examplesDir() {
  if (const char *e = std::getenv("KFUSE_EXAMPLES"); e && *e)
    return e;
  return KFUSE_SOURCE_DIR "/examples/graphs";
}

} // namespace kfuse::gputest
