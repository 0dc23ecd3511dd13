#include "codegen/ReduceStage.h"

#include "codegen/Emitter.h"
#include "codegen/ReduceIndex.h"
#include "codegen/ReduceSpec.h"

namespace kfuse::codegen {

namespace {

/// Input j's offset in the stage: the inputs staged before it, each the CTA's share of a row
/// (a multiple of 16 bytes, ReduceSpec::stage).
uint64_t stageOffset(const KernelSpec &k, size_t j) {
  uint64_t off = 0;
  for (size_t i = 0; i < j; ++i)
    off += stagedRowBytes(*k.reduce(), k.inputs[i]);
  return off;
}

/// The copies of row `m` (thread 0, where there is such a row): the CTA's share of each
/// staged input's row, counted on stbar as their bytes.
void writeCopies(Emitter &e, const KernelSpec &k, const StageNames &n, const std::string &m) {
  const ReduceSpec &r = *k.reduce();
  e.openScope("if (threadIdx.x == 0 && {} < {}{})", m, r.rows, n.suffix);
  uint64_t total = 0;
  for (const SpecTensor &t : k.inputs)
    total += stagedRowBytes(r, t);
  e.line("kf_mbar_expect(kf_saddr(&stbar), {}u);", total);
  for (size_t j = 0; j < k.inputs.size(); ++j)
    if (uint64_t bytes = stagedRowBytes(r, k.inputs[j]))
      e.line("kf_bulk_load(kf_saddr(stage + {}), in{} + ({}) + ({})rank * {}{}, {}u, "
             "kf_saddr(&stbar));",
             stageOffset(k, j), j, reduceOffset(k.iterShape, r.mask, k.inputs[j], false, m, n.suffix),
             n.idx, r.colsPerCta(), n.suffix, bytes);
  e.closeScope();
}

} // namespace

void writeStageSetup(Emitter &e, const KernelSpec &k, const StageNames &n,
                     const std::string &firstBase) {
  e.line("// The CTA's share of each row's cached inputs comes into `stage` by the bulk copy");
  e.line("// engine one row ahead, completing on stbar (stph: its phase to wait for).");
  e.line("extern __shared__ __align__(128) unsigned char stage[];");
  e.line("__shared__ unsigned long long stbar;");
  e.openScope("if (threadIdx.x == 0)");
  e.line("kf_mbar_init(kf_saddr(&stbar), 1u);");
  e.line("kf_fence_mbar_init();");
  e.closeScope();
  e.line("__syncthreads();");
  writeCopies(e, k, n, firstBase);
  e.line("unsigned stph = 0u;");
}

void writeStageWait(Emitter &e) {
  e.line("kf_mbar_wait(kf_saddr(&stbar), stph);");
  e.line("stph ^= 1u;");
}

std::string stagedVector(const KernelSpec &k, size_t j, const std::string &q0) {
  size_t size = dtypeSize(k.inputs[j].type.dtype);
  return fmt::format("stage + {} + ((unsigned){}) * {}u", stageOffset(k, j), q0, size);
}

void writeStageNext(Emitter &e, const KernelSpec &k, const StageNames &n,
                    const std::string &nextBase) {
  e.line("__syncthreads(); // every thread's vectors are out of `stage` before it is refilled");
  writeCopies(e, k, n, nextBase);
}

} // namespace kfuse::codegen
