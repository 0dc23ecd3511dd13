#include "codegen/KernelEmitter.h"

#include "codegen/DecodeGemm.h"
#include "codegen/GemmCodegen.h"
#include "codegen/ReduceCodegen.h"

#include <algorithm>

namespace kfuse::codegen {

namespace {

unsigned ceilDiv(int64_t a, int64_t b) { return static_cast<unsigned>((a + b - 1) / b); }

/// Elementwise kernels: a grid-stride loop of vector steps over the iteration shape.
class PointwiseEmitter final : public KernelEmitter {
public:
  void emit(Emitter &e, const KernelSpec &k, const CodegenOptions &o) const override {
    emitPointwiseKernel(e, k, o);
  }
  LaunchConfig launch(const KernelSpec &k, unsigned block, uint64_t maxBlocks) const override {
    LaunchConfig c;
    c.block = block;
    uint64_t n = static_cast<uint64_t>(k.numel());
    uint64_t v = k.vectorWidth();
    uint64_t work = n / v + n % v; // vector iterations plus the scalar tail
    uint64_t blocks = (work + block - 1) / block;
    c.grid = std::max<uint64_t>(1, std::min(blocks, maxBlocks));
    c.gridStride = true;
    return c;
  }
  std::vector<KernelParam> params(const KernelSpec &k) const override { return pointerParams(k); }
  double flops(const KernelSpec &k) const override {
    return static_cast<double>(k.ops.size()) * static_cast<double>(k.numel());
  }
};

/// GEMMs with an elementwise epilogue: the tile templates of codegen/cuda, their launch
/// from the tiling, the TMA tensor maps of A and B before the pointers.
class GemmEmitter final : public KernelEmitter {
public:
  void emit(Emitter &e, const KernelSpec &k, const CodegenOptions &) const override {
    emitGemmKernel(e, k);
  }
  LaunchConfig launch(const KernelSpec &k, unsigned, uint64_t) const override {
    const GemmSpec &s = *k.gemm();
    LaunchConfig c;
    c.block = s.threads();
    c.grid = ceilDiv(s.N, s.bn);
    c.gridY = s.kernel == GemmKernel::Gemv ? 1 : ceilDiv(s.M, s.bm);
    if (s.kernel == GemmKernel::Decode) { // y: the K slices, one cluster (gridY == cluster size)
      c.grid = s.ctas; // x: a CTA per column tile, or fewer, persistent (decodeLoops)
      c.gridY = s.ks;
    }
    c.gridZ = static_cast<unsigned>(s.batch());
    if (s.kernel == GemmKernel::Wgmma) { // persistent: one CTA per SM, looping over tiles
      c.grid = s.ctas;
      c.gridY = c.gridZ = 1;
    }
    c.sharedBytes = static_cast<unsigned>(s.sharedBytes());
    return c;
  }
  std::vector<KernelParam> params(const KernelSpec &k) const override {
    const GemmSpec &s = *k.gemm();
    std::vector<KernelParam> out;
    // TMA kernels take their tensor maps first, by value: the Hopper GEMM A's and B's, the
    // decode kernel B's.
    if (s.tensorMaps() >= 2)
      out.push_back({KernelParam::TensorMap, false, 0, &s.tmaA, true});
    if (s.tensorMaps() >= 1)
      out.push_back({KernelParam::TensorMap, false, 1, &s.tmaB, true});
    if (s.tensorMaps() == 3) // a dual GEMM's B2 (input 2), laid out as B
      out.push_back({KernelParam::TensorMap, false, 2, &s.tmaB, true});
    std::vector<KernelParam> ptrs = pointerParams(k);
    ptrs[0].aligned16 = ptrs[1].aligned16 = true; // A and B: 16-byte copies and loads
    if (s.dual)
      ptrs[2].aligned16 = true;
    out.insert(out.end(), ptrs.begin(), ptrs.end());
    if (s.streamK) { // the decode kernel's column tiles cut between CTAs meet here
      KernelParam ws;
      ws.kind = KernelParam::Workspace;
      ws.workspaceBytes = decodeWorkspaceBytes(s);
      out.push_back(ws);
    }
    return out;
  }
  double flops(const KernelSpec &k) const override {
    const GemmSpec &g = *k.gemm(); // 2 M N K per batch and product, the epilogue per element
    return 2.0 * double(g.M) * double(g.N) * double(g.K) * double(g.batch()) * g.products() +
           double(k.ops.size() - g.products()) * double(k.numel());
  }
};

/// Reductions with their prologue and epilogue (codegen/ReduceSpec.h): a group of threads
/// per row, rows in a grid-stride loop over blocks of whole rows.
class ReduceEmitter final : public KernelEmitter {
public:
  void emit(Emitter &e, const KernelSpec &k, const CodegenOptions &) const override {
    emitReduceKernel(e, k);
  }
  LaunchConfig launch(const KernelSpec &k, unsigned, uint64_t maxBlocks) const override {
    const ReduceSpec &r = *k.reduce();
    LaunchConfig c;
    c.block = r.block;
    uint64_t rowBlocks = (uint64_t(r.rows) + r.rowsPerBlock() - 1) / r.rowsPerBlock();
    // maxBlocks counts blocks of the default 256 threads: as many threads in flight.
    // A split row's CTAs are all resident at once by its plan: two per SM.
    uint64_t cap = r.split > 1 ? rowBlocks
                               : std::max<uint64_t>(1, maxBlocks * 256 / r.block / r.cluster);
    c.grid = std::max<uint64_t>(1, std::min(rowBlocks, cap)) * r.ctasPerRow(); // whole groups
    c.gridStride = true;
    c.cluster = r.cluster;
    c.syncGroup = r.split;
    c.sharedBytes = r.stageBytes; // the staged rows (dynamic shared memory)
    return c;
  }
  std::vector<KernelParam> params(const KernelSpec &k) const override {
    std::vector<KernelParam> out = pointerParams(k);
    const ReduceSpec &r = *k.reduce();
    if (r.inner && r.vec > 1) // contiguous rows are read and written in vectors
      for (KernelParam &p : out) {
        const SpecTensor &t = p.output ? k.outputs[p.index].tensor : k.inputs[p.index];
        bool contig = true;
        for (size_t d = 0; d < t.aligned.size(); ++d)
          if (r.mask[d] && k.iterShape[d] != 1 && t.aligned[d] != k.iterShape[d])
            contig = false;
        bool perRow = p.output && r.rowOp[k.outputs[p.index].op];
        p.aligned16 = contig && !perRow;
      }
    if (r.split > 1) {
      KernelParam ws;
      ws.kind = KernelParam::Workspace;
      ws.workspaceBytes = r.workspaceBytes();
      out.push_back(ws);
    }
    return out;
  }
  double flops(const KernelSpec &k) const override {
    return static_cast<double>(k.ops.size()) * static_cast<double>(k.numel());
  }
};

} // namespace

const KernelEmitter &emitterFor(const KernelSpec &k) {
  static const PointwiseEmitter pointwise;
  static const GemmEmitter gemm;
  static const ReduceEmitter reduce;
  struct Pick {
    const KernelEmitter &operator()(const Pointwise &) const { return pointwise; }
    const KernelEmitter &operator()(const GemmSpec &) const { return gemm; }
    const KernelEmitter &operator()(const ReduceSpec &) const { return reduce; }
  };
  return std::visit(Pick{}, k.kind);
}

std::vector<KernelParam> pointerParams(const KernelSpec &k) {
  std::vector<KernelParam> out;
  for (unsigned i = 0; i < k.inputs.size(); ++i)
    out.push_back({KernelParam::Pointer, false, i, nullptr, false});
  for (unsigned j = 0; j < k.outputs.size(); ++j)
    out.push_back({KernelParam::Pointer, true, j, nullptr, false});
  return out;
}

} // namespace kfuse::codegen
