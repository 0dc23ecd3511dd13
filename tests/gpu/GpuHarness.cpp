#include "GpuHarness.h"

#include "ir/Compare.h"
#include "ir/Error.h"
#include "ir/ErrorBound.h"
#include "ir/Interpreter.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <llvm/ADT/DenseMap.h>
#include <random>

namespace kfuse::gputest {

using runtime::Driver;

// Scalar semantics are the interpreter's own (ir/Interpreter.h), so the GPU is checked
// against exactly the oracle every CPU test uses.
static double evalOp(OpKind k, double a, double b) {
  return opClass(k) == OpClass::Unary ? evalUnary(k, a) : evalBinary(k, a, b);
}

/// Offset in a tensor of shape `s` for the linear index `i` of broadcast shape `out`.
static int64_t bcastOffset(llvm::ArrayRef<int64_t> s, llvm::ArrayRef<int64_t> out, int64_t i) {
  int64_t off = 0, stride = 1;
  for (int d = static_cast<int>(out.size()) - 1, e = static_cast<int>(s.size()) - 1; d >= 0;
       --d, --e) {
    int64_t c = i % out[d];
    i /= out[d];
    if (e >= 0) {
      if (s[e] != 1)
        off += c * stride;
      stride *= s[e];
    }
  }
  return off;
}

static bool hasReduction(const Graph &g) {
  return std::any_of(g.nodes().begin(), g.nodes().end(),
                     [](const Node *n) { return isReduction(n->kind()); });
}

/// The reference interpreter's outputs of `g` (whose inputs are those of the graph the
/// values were made for), as plain values.
static std::vector<HostTensor> interpretValues(const Graph &g,
                                               const std::vector<HostTensor> &inputs,
                                               const std::vector<unsigned> &stored) {
  std::vector<Tensor> in;
  for (size_t i = 0; i < g.inputs().size(); ++i)
    in.emplace_back(g.inputs()[i]->type(), inputs[i]);
  std::vector<HostTensor> out;
  for (Tensor &t : interpret(g, in, stored))
    out.push_back(std::move(t.data));
  return out;
}

std::vector<HostTensor> reference(const Graph &g, const std::vector<HostTensor> &inputs,
                                  const std::vector<unsigned> &stored) {
  // Reductions: the interpreter itself (the same rounding of inputs, stored values and
  // outputs); the loop below evaluates elementwise ops only.
  if (hasReduction(g))
    return interpretValues(g, inputs, stored);
  llvm::DenseMap<const Node *, HostTensor> val;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    HostTensor t = inputs[i];
    for (double &v : t)
      v = roundToDType(v, g.inputs()[i]->dtype());
    val[g.inputs()[i]] = std::move(t);
  }
  for (const Node *n : g.nodes()) {
    if (n->isInput())
      continue;
    int64_t count = n->type().numElements();
    HostTensor r(count);
    for (int64_t i = 0; i < count; ++i) {
      double a[2] = {0, 0};
      for (unsigned j = 0; j < n->numOperands(); ++j) {
        const Operand &o = n->operand(j);
        a[j] = o.isScalar() ? static_cast<double>(static_cast<float>(o.scalar))
                            : val[o.node][bcastOffset(o.node->shape(), n->shape(), i)];
      }
      r[i] = n->kind() == OpKind::Cast ? roundToDType(a[0], n->dtype())
                                       : evalOp(n->kind(), a[0], a[1]);
    }
    if (std::find(stored.begin(), stored.end(), n->id()) != stored.end())
      for (double &v : r)
        v = roundToDType(v, n->dtype());
    val[n] = std::move(r);
  }
  std::vector<HostTensor> out;
  for (const Node *n : g.outputs()) {
    HostTensor t = val[n];
    for (double &v : t)
      v = roundToDType(v, n->dtype());
    out.push_back(std::move(t));
  }
  return out;
}

HostTensor randomTensor(const TensorType &t, uint64_t seed, bool specials) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  std::uniform_int_distribution<int> pick(0, 299);
  HostTensor v(t.numElements());
  for (double &x : v) {
    int p = specials ? pick(rng) : 99;
    x = p == 0 ? NAN : p == 1 ? INFINITY : p == 2 ? -INFINITY : roundToDType(u(rng), t.dtype);
  }
  return v;
}

DeviceBuffer upload(const TensorType &t, const HostTensor &v) {
  return runtime::upload(Tensor(t, v));
}

HostTensor download(const TensorType &t, const DeviceBuffer &b) {
  return runtime::download(t, b.ptr()).data;
}

std::string compare(DType t, const HostTensor &got, const HostTensor &ref, double scale,
                    const HostTensor &errorScale) {
  return compareValues(got, ref, Tolerance::of(t, scale), errorScale,
                       errorScale.empty() ? 0.0 : kErrorMargin);
}

/// The forward error scale of each output (ir/ErrorBound.h) for graphs with reductions:
/// a mean subtracted from its own row and scaled by rsqrt(var + eps) turns the f32 rounding
/// of the row's values into an error of up to 1/sqrt(eps) times theirs, which no fixed
/// relative tolerance allows for (seed 404: a layer norm over one element, its values off
/// 1.6e-4 relative to the 4e-6 allowed). Elementwise graphs keep the plain tolerance.
static std::vector<HostTensor> errorScales(const Graph &g, const std::vector<HostTensor> &inputs) {
  if (!hasReduction(g))
    return std::vector<HostTensor>(g.outputs().size());
  return interpretValues(*errorGraph(g), inputs, {});
}

std::string runAndCheck(const Graph &g, uint64_t seed, bool specials) {
  Driver &d = Driver::require();
  std::vector<HostTensor> in;
  std::vector<DeviceBuffer> inBuf, outBuf;
  std::vector<CUdeviceptr> inPtr, outPtr;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    in.push_back(randomTensor(g.inputs()[i]->type(), seed * 1000 + i, specials));
    inBuf.push_back(upload(g.inputs()[i]->type(), in.back()));
    inPtr.push_back(inBuf.back().ptr());
  }
  for (const Node *o : g.outputs()) {
    outBuf.emplace_back(o->type().bytes());
    poison(outBuf.back());
    outPtr.push_back(outBuf.back().ptr());
  }
  runtime::Executable exe(d, runtime::compileAsGiven(d, g));
  exe.launch(inPtr, outPtr, nullptr);
  d.check(d.cuCtxSynchronize(), "running the kernels");
  // The reference rounds what the plan stores, as the kernels do. The kernels' f32 math
  // can still land on the other side of a rounding at a stored intermediate than the
  // float64 reference; such a step is one unit of the stored dtype, which later ops carry
  // on: the bound is that of the loosest stored dtype, scaled for several kernels.
  // Only 16-bit values: the kernels compute in f32, so an f32 value is the same whether it
  // is stored or not, and rounding the float64 reference there alone would set it apart
  // from the unrounded values beside it (mean(x) - mean(x) in one kernel, one of them
  // stored, is 0 on the GPU and 1e-8 in such a reference).
  std::vector<unsigned> stored;
  for (const codegen::KernelSpec &k : exe.specs())
    for (const codegen::SpecOutput &o : k.outputs)
      if (o.tensor.type.dtype != DType::F32)
        stored.push_back(o.tensor.nodeId);
  std::vector<HostTensor> ref = reference(g, in, stored);
  std::vector<HostTensor> err = errorScales(g, in);
  DType loosest = DType::F32;
  for (const codegen::KernelSpec &k : exe.specs())
    for (const codegen::SpecOutput &o : k.outputs)
      loosest = coarserDType(loosest, o.tensor.type.dtype);
  double scale = exe.specs().size() > 1 ? 4.0 : 1.0;
  // A reduction adds N values in f32 in an order of its own: its error grows like sqrt(N)
  // units of f32 (as a matmul's with K).
  for (const codegen::KernelSpec &k : exe.specs())
    if (const codegen::ReduceSpec *r = k.reduce())
      scale = std::max(scale, std::sqrt(static_cast<double>(r->cols)));
  for (size_t j = 0; j < g.outputs().size(); ++j) {
    DType t = g.outputs()[j]->dtype();
    DType tol = exe.specs().size() > 1 ? coarserDType(t, loosest) : t;
    std::string m =
        compare(tol, download(g.outputs()[j]->type(), outBuf[j]), ref[j], scale, err[j]);
    if (!m.empty())
      return fmt::format("output {} ({}): {}", j, g.outputs()[j]->type().str(), m);
  }
  return "";
}

bool quickMode() {
  static const bool quick = [] {
    const char *v = std::getenv("KFUSE_GPU_QUICK");
    return v && *v && std::string(v) != "0";
  }();
  return quick;
}

int64_t scaled(int64_t full, int64_t quick) { return quickMode() ? quick : full; }

} // namespace kfuse::gputest
