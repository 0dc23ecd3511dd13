#include "ir/Interpreter.h"
#include "ir/Reduction.h"

#include "ir/Error.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>

namespace kfuse {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();


/// Row-major strides of `shape` laid into an output of rank `rank` (aligned from the right),
/// with 0 for broadcast (size-1 or missing) dims.
llvm::SmallVector<int64_t, 6> broadcastStrides(llvm::ArrayRef<int64_t> shape,
                                               llvm::ArrayRef<int64_t> out) {
  size_t rank = out.size();
  llvm::SmallVector<int64_t, 6> strides(rank, 0);
  int64_t s = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    size_t d = shape.size() - 1 - i;
    size_t od = rank - 1 - i;
    strides[od] = (shape[d] == 1 && out[od] != 1) ? 0 : s;
    s *= shape[d];
  }
  return strides;
}

/// Calls f(outIndex, aIndex, bIndex) for every element of `out`, where a and b broadcast to it.
template <typename F>
void forEachBroadcast(llvm::ArrayRef<int64_t> out, llvm::ArrayRef<int64_t> a,
                      llvm::ArrayRef<int64_t> b, F f) {
  int64_t total = numElements(out);
  if (total == 0)
    return;
  if (out.empty()) {
    f(0, 0, 0);
    return;
  }
  auto sa = broadcastStrides(a, out);
  auto sb = broadcastStrides(b, out);
  size_t rank = out.size();
  int64_t inner = out[rank - 1], ia = sa[rank - 1], ib = sb[rank - 1];
  llvm::SmallVector<int64_t, 6> idx(rank, 0);
  int64_t offA = 0, offB = 0;
  for (int64_t o = 0; o < total; o += inner) {
    for (int64_t j = 0; j < inner; ++j)
      f(o + j, offA + j * ia, offB + j * ib);
    // Advance the odometer over the outer dims.
    for (size_t d = rank - 1; d-- > 0;) {
      ++idx[d];
      offA += sa[d];
      offB += sb[d];
      if (idx[d] < out[d])
        break;
      offA -= sa[d] * out[d];
      offB -= sb[d] * out[d];
      idx[d] = 0;
    }
  }
}

void evalUnaryNode(const Node *n, const Tensor &x, Tensor &out) {
  OpKind k = n->kind();
  for (size_t i = 0; i < x.data.size(); ++i)
    out.data[i] = evalUnary(k, x.data[i]);
}

void evalCastNode(const Node *n, const Tensor &x, Tensor &out) {
  DType to = n->dtype();
  for (size_t i = 0; i < x.data.size(); ++i)
    out.data[i] = roundToDType(x.data[i], to);
}

void evalBinaryNode(const Node *n, const Tensor *a, const Tensor *b, Tensor &out) {
  OpKind k = n->kind();
  const Operand &oa = n->operand(0), &ob = n->operand(1);
  if (oa.isScalar() && ob.isScalar()) {
    double v = evalBinary(k, literalValue(oa.scalar), literalValue(ob.scalar));
    std::fill(out.data.begin(), out.data.end(), v);
  } else if (ob.isScalar()) {
    double s = literalValue(ob.scalar);
    for (size_t i = 0; i < out.data.size(); ++i)
      out.data[i] = evalBinary(k, a->data[i], s);
  } else if (oa.isScalar()) {
    double s = literalValue(oa.scalar);
    for (size_t i = 0; i < out.data.size(); ++i)
      out.data[i] = evalBinary(k, s, b->data[i]);
  } else if (a->shape() == out.shape() && b->shape() == out.shape()) {
    for (size_t i = 0; i < out.data.size(); ++i)
      out.data[i] = evalBinary(k, a->data[i], b->data[i]);
  } else {
    const double *pa = a->data.data(), *pb = b->data.data();
    double *po = out.data.data();
    forEachBroadcast(out.shape(), a->shape(), b->shape(), [&](int64_t o, int64_t ia, int64_t ib) {
      po[o] = evalBinary(k, pa[ia], pb[ib]);
    });
  }
}

/// Two doubles in one SSE register (GCC/Clang vector extension): the 4x4 micro-kernel below
/// keeps its accumulators in eight of them, which -O2 alone does not manage from scalar code.
typedef double V2 __attribute__((vector_size(16)));

inline V2 load2(const double *p) {
  V2 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store2(double *p, V2 v) { std::memcpy(p, &v, sizeof v); }

/// C[0:4, 0:4] (row stride ldc) += A-block times the packed B tile rows, over kc steps of k.
/// `a(r, kk)` reads A[i0 + r, kb + kk].
template <typename ReadA>
void microKernel4x4(double *c, int64_t ldc, const double *tile, int64_t ldt, int64_t kc, ReadA a) {
  V2 acc[4][2];
  for (int r = 0; r < 4; ++r) {
    acc[r][0] = load2(c + r * ldc);
    acc[r][1] = load2(c + r * ldc + 2);
  }
  for (int64_t kk = 0; kk < kc; ++kk) {
    V2 b0 = load2(tile + kk * ldt), b1 = load2(tile + kk * ldt + 2);
    for (int r = 0; r < 4; ++r) {
      double v = a(r, kk);
      V2 av = {v, v};
      acc[r][0] += av * b0;
      acc[r][1] += av * b1;
    }
  }
  for (int r = 0; r < 4; ++r) {
    store2(c + r * ldc, acc[r][0]);
    store2(c + r * ldc + 2, acc[r][1]);
  }
}

/// C[M, N] += A[M, K] * B[K, N] for one batch, where A and B may be read transposed.
/// Blocked over N and K so a packed tile of B (row-major, contiguous in N) stays in cache;
/// within a tile, 4x4 blocks of C stay in registers while k runs. Every C[i, j] still sums
/// its K products one by one in increasing k (no FMA, no reassociation), exactly as a naive
/// loop does.
template <bool TransA>
void matmulBatch(const double *A, const double *B, double *C, int64_t M, int64_t N, int64_t K,
                 bool transB, std::vector<double> &tile) {
  constexpr int64_t kBlockN = 512, kBlockK = 128;
  tile.resize(static_cast<size_t>(kBlockN * kBlockK));
  auto at = [&](int64_t i, int64_t k) { return TransA ? A[k * M + i] : A[i * K + k]; };
  for (int64_t jb = 0; jb < N; jb += kBlockN) {
    int64_t nb = std::min(kBlockN, N - jb);
    for (int64_t kb = 0; kb < K; kb += kBlockK) {
      int64_t kc = std::min(kBlockK, K - kb);
      for (int64_t kk = 0; kk < kc; ++kk) {
        double *row = tile.data() + kk * nb;
        int64_t k = kb + kk;
        if (transB)
          for (int64_t jj = 0; jj < nb; ++jj)
            row[jj] = B[(jb + jj) * K + k];
        else
          std::copy_n(B + k * N + jb, nb, row);
      }
      for (int64_t i0 = 0; i0 < M; i0 += 4) {
        int64_t mr = std::min<int64_t>(4, M - i0);
        for (int64_t j0 = 0; j0 < nb; j0 += 4) {
          int64_t nr = std::min<int64_t>(4, nb - j0);
          double *c = C + i0 * N + jb + j0;
          if (mr == 4 && nr == 4) {
            microKernel4x4(c, N, tile.data() + j0, nb, kc,
                           [&](int r, int64_t kk) { return at(i0 + r, kb + kk); });
            continue;
          }
          for (int64_t r = 0; r < mr; ++r)
            for (int64_t q = 0; q < nr; ++q) {
              double s = c[r * N + q];
              for (int64_t kk = 0; kk < kc; ++kk)
                s += at(i0 + r, kb + kk) * tile[kk * nb + j0 + q];
              c[r * N + q] = s;
            }
        }
      }
    }
  }
}

// A reduction: every input element added into (or maxed with) its output element, the
// output's index found by dropping the reduced dims' strides. In float64; NaN propagates
// through amax/amin (a comparison alone would drop it); mean of an empty axis is 0/0 = NaN.
void evalReductionNode(const Node *n, const Tensor &x, Tensor &out) {
  OpKind k = n->kind();
  AxisMask mask = reductionMask(n);
  const Shape &in = x.type.shape;
  size_t rank = in.size();
  // The output's stride for each input dim (0 for a reduced dim), output laid out row-major.
  llvm::SmallVector<int64_t, 4> ostride(rank, 0);
  int64_t s = 1, count = 1;
  for (size_t d = rank; d-- > 0;) {
    if (mask[d]) {
      count *= in[d];
      continue;
    }
    ostride[d] = s;
    s *= in[d];
  }
  std::fill(out.data.begin(), out.data.end(), reductionIdentity(k));
  llvm::SmallVector<int64_t, 4> idx(rank, 0);
  int64_t o = 0;
  for (int64_t i = 0, e = x.numElements(); i < e; ++i) {
    double v = x.data[i], &acc = out.data[o];
    switch (k) {
    case OpKind::Amax:
      acc = (std::isnan(v) || std::isnan(acc)) ? kNaN : std::max(acc, v);
      break;
    case OpKind::Amin:
      acc = (std::isnan(v) || std::isnan(acc)) ? kNaN : std::min(acc, v);
      break;
    default:
      acc += v;
      break;
    }
    for (size_t d = rank; d-- > 0;) { // next index, carrying the output offset along
      o += ostride[d];
      if (++idx[d] < in[d])
        break;
      o -= ostride[d] * in[d];
      idx[d] = 0;
    }
  }
  if (k == OpKind::Mean)
    for (double &v : out.data)
      v /= static_cast<double>(count);
}

void evalMatMulNode(const Node *n, const Tensor &a, const Tensor &b, Tensor &out) {
  const MatMulAttrs &attrs = n->matmulAttrs();
  const Shape &sa = a.shape(), &sb = b.shape(), &so = out.shape();
  size_t ra = sa.size(), rb = sb.size(), ro = so.size();
  int64_t M = so[ro - 2], N = so[ro - 1];
  int64_t K = attrs.transA ? sa[ra - 2] : sa[ra - 1];
  llvm::ArrayRef<int64_t> batchOut = llvm::ArrayRef<int64_t>(so).drop_back(2);
  llvm::ArrayRef<int64_t> batchA = llvm::ArrayRef<int64_t>(sa).drop_back(2);
  llvm::ArrayRef<int64_t> batchB = llvm::ArrayRef<int64_t>(sb).drop_back(2);
  (void)rb;
  std::fill(out.data.begin(), out.data.end(), 0.0);
  if (out.data.empty())
    return;
  int64_t sizeA = M * K, sizeB = K * N, sizeC = M * N;
  std::vector<double> tile;
  auto runBatch = [&](int64_t o, int64_t ia, int64_t ib) {
    const double *pa = a.data.data() + ia * sizeA, *pb = b.data.data() + ib * sizeB;
    double *pc = out.data.data() + o * sizeC;
    if (attrs.transA)
      matmulBatch<true>(pa, pb, pc, M, N, K, attrs.transB, tile);
    else
      matmulBatch<false>(pa, pb, pc, M, N, K, attrs.transB, tile);
  };
  if (batchOut.empty())
    runBatch(0, 0, 0);
  else
    forEachBroadcast(batchOut, batchA, batchB, runBatch);
}

} // namespace

double evalUnary(OpKind k, double x) {
  switch (k) {
  case OpKind::Neg:
    return -x;
  case OpKind::Abs:
    return std::fabs(x);
  case OpKind::Exp:
    return std::exp(x);
  case OpKind::Log:
    return std::log(x);
  case OpKind::Sqrt:
    return std::sqrt(x);
  case OpKind::Rsqrt:
    return 1.0 / std::sqrt(x);
  case OpKind::Tanh:
    return std::tanh(x);
  case OpKind::Sigmoid:
    return 1.0 / (1.0 + std::exp(-x));
  case OpKind::Relu:
    return std::isnan(x) ? x : (x > 0 ? x : 0.0);
  case OpKind::Gelu:
    return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); // 1 + erf(x) cancels for x << 0
  case OpKind::GeluTanh: {
    const double c = std::sqrt(2.0 / std::numbers::pi);
    return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
  }
  case OpKind::Silu:
    return x / (1.0 + std::exp(-x));
  default:
    break;
  }
  fail("interpreter: '{}' is not a unary op", opName(k));
}

double evalBinary(OpKind k, double a, double b) {
  switch (k) {
  case OpKind::Add: return a + b;
  case OpKind::Sub: return a - b;
  case OpKind::Mul: return a * b;
  case OpKind::Div: return a / b;
  // IEEE 754-2019 maximum/minimum: NaN propagates and -0 < +0, so the result does not
  // depend on the operands' order (std::max returns its first argument on a tie).
  case OpKind::Max:
    if (std::isnan(a) || std::isnan(b))
      return kNaN;
    if (a == b)
      return std::signbit(a) ? b : a;
    return std::max(a, b);
  case OpKind::Min:
    if (std::isnan(a) || std::isnan(b))
      return kNaN;
    if (a == b)
      return std::signbit(a) ? a : b;
    return std::min(a, b);
  case OpKind::Pow: return std::pow(a, b);
  default: break;
  }
  fail("interpreter: '{}' is not a binary op", opName(k));
}

std::vector<Tensor> interpret(const Graph &g, llvm::ArrayRef<Tensor> inputs) {
  return interpret(g, inputs, {});
}

void checkInterpretable(const Graph &g) {
  for (const Node *n : g.nodes())
    if (n->type().numElements() > kMaxInterpretElements)
      fail("interpreter: {} is {} ({} elements); the reference interpreter is for test-sized "
           "graphs (at most 2^28 elements per tensor)",
           nodeLabel(n), n->type().str(), n->type().numElements());
}

std::vector<Tensor> interpret(const Graph &g, llvm::ArrayRef<Tensor> inputs,
                              llvm::ArrayRef<unsigned> stored) {
  const std::vector<Node *> &nodes = g.nodes();
  checkInterpretable(g);
  unsigned maxId = 0;
  for (const Node *n : nodes)
    maxId = std::max(maxId, n->id());

  llvm::ArrayRef<Node *> graphInputs = g.inputs();
  if (inputs.size() != graphInputs.size())
    fail("graph '{}' has {} input{}, but {} tensor{} given", g.name(), graphInputs.size(),
         graphInputs.size() == 1 ? "" : "s", inputs.size(), inputs.size() == 1 ? " was" : "s were");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Node *in = graphInputs[i];
    if (!(inputs[i].type == in->type()))
      fail("input {} ('{}') of graph '{}' is {}, but the tensor given is {}", i, in->name(),
           g.name(), in->type().str(), inputs[i].type.str());
    if (static_cast<int64_t>(inputs[i].data.size()) != in->type().numElements())
      fail("input {} ('{}') of graph '{}' is {} ({} elements), but the tensor holds {} values", i,
           in->name(), g.name(), in->type().str(), in->type().numElements(), inputs[i].data.size());
  }

  // Slots by node id; `pending` counts the uses still to run, so a tensor is freed after its
  // last user. Outputs keep theirs.
  std::vector<Tensor> values(maxId + 1);
  std::vector<int64_t> pending(maxId + 1, 0);
  std::vector<char> isOut(maxId + 1, 0);
  std::vector<int64_t> inputIndex(maxId + 1, -1);
  for (const Node *n : nodes)
    pending[n->id()] = static_cast<int64_t>(n->users().size());
  for (const Node *n : g.outputs())
    isOut[n->id()] = 1;
  for (size_t i = 0; i < graphInputs.size(); ++i)
    inputIndex[graphInputs[i]->id()] = static_cast<int64_t>(i);
  std::vector<char> isStored(maxId + 1, 0);
  for (unsigned id : stored)
    if (id <= maxId)
      isStored[id] = 1;

  auto release = [&](const Node *n) {
    if (--pending[n->id()] == 0 && !isOut[n->id()]) {
      values[n->id()] = Tensor();
    }
  };

  for (const Node *n : nodes) {
    bool needed = pending[n->id()] > 0 || isOut[n->id()];
    if (needed) {
      Tensor out(n->type());
      auto operandTensor = [&](unsigned i) -> const Tensor * {
        const Operand &o = n->operand(i);
        return o.isScalar() ? nullptr : &values[o.node->id()];
      };
      switch (n->opClass()) {
      case OpClass::Source: {
        int64_t idx = inputIndex[n->id()];
        if (idx < 0)
          fail("interpreter: input node {} is not among the graph's inputs", nodeLabel(n));
        out.data = inputs[idx].data;
        roundInPlace(out);
        break;
      }
      case OpClass::Unary:
        evalUnaryNode(n, *operandTensor(0), out);
        break;
      case OpClass::Cast:
        evalCastNode(n, *operandTensor(0), out);
        break;
      case OpClass::Binary:
        evalBinaryNode(n, operandTensor(0), operandTensor(1), out);
        break;
      case OpClass::Contraction:
        evalMatMulNode(n, *operandTensor(0), *operandTensor(1), out);
        break;
      case OpClass::Reduction:
        evalReductionNode(n, *operandTensor(0), out);
        break;
      }
      if (isStored[n->id()])
        roundInPlace(out);
      values[n->id()] = std::move(out);
    }
    for (const Operand &o : n->operands())
      if (o.node)
        release(o.node);
  }

  std::vector<Tensor> results;
  results.reserve(g.outputs().size());
  for (const Node *n : g.outputs()) {
    Tensor t = values[n->id()];
    roundInPlace(t);
    results.push_back(std::move(t));
  }
  return results;
}

} // namespace kfuse
