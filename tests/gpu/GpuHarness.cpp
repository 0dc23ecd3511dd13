#include "GpuHarness.h"

#include "ir/Error.h"
#include "ir/Interpreter.h"

#include <cmath>
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
  for (int d = static_cast<int>(out.size()) - 1, e = static_cast<int>(s.size()) - 1; d >= 0; --d, --e) {
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

std::vector<HostTensor> reference(const Graph &g, const std::vector<HostTensor> &inputs) {
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
      r[i] = n->kind() == OpKind::Cast ? roundToDType(a[0], n->dtype()) : evalOp(n->kind(), a[0], a[1]);
    }
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

DeviceBuffer::DeviceBuffer(size_t b) : bytes(b) {
  Driver &d = Driver::require();
  d.check(d.cuMemAlloc_v2(&ptr, b ? b : 16), "cuMemAlloc");
}
DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&o) noexcept {
  std::swap(ptr, o.ptr);
  std::swap(bytes, o.bytes);
  return *this;
}
DeviceBuffer::~DeviceBuffer() {
  if (ptr)
    Driver::get()->cuMemFree_v2(ptr);
}

DeviceBuffer upload(const TensorType &t, const HostTensor &v) {
  Driver &d = Driver::require();
  DeviceBuffer b(t.bytes());
  std::vector<unsigned char> raw(t.bytes());
  for (size_t i = 0; i < v.size(); ++i) {
    if (t.dtype == DType::F32) {
      float f = static_cast<float>(v[i]);
      std::memcpy(&raw[i * 4], &f, 4);
    } else {
      uint16_t h = t.dtype == DType::F16 ? floatToHalfBits(static_cast<float>(v[i])) : floatToBF16Bits(static_cast<float>(v[i]));
      std::memcpy(&raw[i * 2], &h, 2);
    }
  }
  if (!raw.empty())
    d.check(d.cuMemcpyHtoD_v2(b.ptr, raw.data(), raw.size()), "cuMemcpyHtoD");
  return b;
}

HostTensor download(const TensorType &t, const DeviceBuffer &b) {
  Driver &d = Driver::require();
  std::vector<unsigned char> raw(t.bytes());
  if (!raw.empty())
    d.check(d.cuMemcpyDtoH_v2(raw.data(), b.ptr, raw.size()), "cuMemcpyDtoH");
  HostTensor v(t.numElements());
  for (size_t i = 0; i < v.size(); ++i) {
    if (t.dtype == DType::F32) {
      float f;
      std::memcpy(&f, &raw[i * 4], 4);
      v[i] = f;
    } else {
      uint16_t h;
      std::memcpy(&h, &raw[i * 2], 2);
      v[i] = t.dtype == DType::F16 ? halfBitsToFloat(h) : bf16BitsToFloat(h);
    }
  }
  return v;
}

void poison(DeviceBuffer &b) {
  Driver &d = Driver::require();
  if (b.bytes)
    d.check(d.cuMemsetD8_v2(b.ptr, 0xFF, b.bytes), "cuMemsetD8");
}

std::string compare(DType t, const HostTensor &got, const HostTensor &ref, double scale) {
  double normTol = scale * (t == DType::F32 ? 1e-6 : t == DType::F16 ? 1e-3 : 1e-2);
  double elemTol = scale * (t == DType::F32 ? 1e-5 : t == DType::F16 ? 4e-3 : 3e-2);
  double diff2 = 0, ref2 = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double g = got[i], r = ref[i];
    if (std::isnan(r) || std::isnan(g)) {
      if (std::isnan(r) != std::isnan(g))
        return fmt::format("element {}: got {} where the reference is {}", i, g, r);
      continue;
    }
    if (std::isinf(r) || std::isinf(g)) {
      if (g != r)
        return fmt::format("element {}: got {} where the reference is {}", i, g, r);
      continue;
    }
    if (std::fabs(g - r) > elemTol * (1.0 + std::fabs(r)))
      return fmt::format("element {}: got {} where the reference is {}", i, g, r);
    diff2 += (g - r) * (g - r);
    ref2 += r * r;
  }
  if (ref2 > 0 && std::sqrt(diff2 / ref2) > normTol)
    return fmt::format("relative error norm {} above {}", std::sqrt(diff2 / ref2), normTol);
  return "";
}

std::string runAndCheck(const Graph &g, uint64_t seed, bool specials) {
  Driver &d = Driver::require();
  std::vector<HostTensor> in;
  std::vector<DeviceBuffer> inBuf, outBuf;
  std::vector<CUdeviceptr> inPtr, outPtr;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    in.push_back(randomTensor(g.inputs()[i]->type(), seed * 1000 + i, specials));
    inBuf.push_back(upload(g.inputs()[i]->type(), in.back()));
    inPtr.push_back(inBuf.back().ptr);
  }
  for (const Node *o : g.outputs()) {
    outBuf.emplace_back(o->type().bytes());
    poison(outBuf.back());
    outPtr.push_back(outBuf.back().ptr);
  }
  runtime::Executable exe(d, g);
  exe.launch(inPtr, outPtr, nullptr);
  d.check(d.cuCtxSynchronize(), "running the kernels");
  std::vector<HostTensor> ref = reference(g, in);
  // A plan of several kernels stores (and so rounds) its intermediates in their dtype,
  // which the reference does not: the bound is that of the loosest stored dtype, and it
  // grows with the number of roundings on the way.
  auto looseness = [](DType t) { return t == DType::F32 ? 0 : t == DType::F16 ? 1 : 2; };
  DType stored = DType::F32;
  for (const codegen::KernelSpec &k : exe.specs())
    for (const codegen::SpecOutput &o : k.outputs)
      if (looseness(o.tensor.type.dtype) > looseness(stored))
        stored = o.tensor.type.dtype;
  double scale = exe.specs().size() > 1 ? 4.0 : 1.0;
  for (size_t j = 0; j < g.outputs().size(); ++j) {
    DType t = g.outputs()[j]->dtype();
    DType tol = exe.specs().size() > 1 && looseness(stored) > looseness(t) ? stored : t;
    std::string m = compare(tol, download(g.outputs()[j]->type(), outBuf[j]), ref[j], scale);
    if (!m.empty())
      return fmt::format("output {} ({}): {}", j, g.outputs()[j]->type().str(), m);
  }
  return "";
}

} // namespace kfuse::gputest
