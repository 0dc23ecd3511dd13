#include "codegen/ReduceStage.h"

#include "codegen/Emitter.h"
#include "codegen/ReduceIndex.h"
#include "codegen/ReduceSpec.h"

namespace kfuse::codegen {

namespace {

/// Input j's offset in the stage: the inputs staged before it, each a whole share of the
/// CTA's rows (multiples of 16 bytes, ReduceSpec::stage).
uint64_t stageOffset(const KernelSpec &k, size_t j) {
  const ReduceSpec &r = *k.reduce();
  uint64_t off = 0;
  for (size_t i = 0; i < j; ++i)
    off += r.rowsPerBlock() * stagedRowBytes(r, k.inputs[i]);
  return off;
}

/// The copies of the row group from `base` (thread 0, where the group has a row): each staged
/// input's share of the group's live rows, counted on stbar as their bytes.
void writeCopies(Emitter &e, const KernelSpec &k, const StageNames &n, const std::string &base) {
  const ReduceSpec &r = *k.reduce();
  const unsigned R = r.rowsPerBlock();
  e.openScope("if (threadIdx.x == 0 && {} < {}{})", base, r.rows, n.suffix);
  // Rows of a group are consecutive, and a staged input holds whole rows (its share of one
  // row in a cluster): the group's part of it is contiguous.
  if (R > 1)
    e.line("const unsigned rows = {0} - {1} < {2}{3} ? (unsigned)({0} - {1}) : {2}u;",
           fmt::format("{}{}", r.rows, n.suffix), base, R, n.suffix);
  else
    e.line("const unsigned rows = 1u;");
  uint64_t perRow = 0;
  for (const SpecTensor &t : k.inputs)
    perRow += stagedRowBytes(r, t);
  e.line("kf_mbar_expect(kf_saddr(&stbar), rows * {}u);", perRow);
  for (size_t j = 0; j < k.inputs.size(); ++j) {
    const SpecTensor &t = k.inputs[j];
    if (uint64_t bytes = stagedRowBytes(r, t)) {
      std::string share = r.cluster > 1 ? fmt::format(" + ({})rank * {}{}", n.idx, r.colsPerCta(),
                                                      n.suffix)
                                        : std::string();
      e.line("kf_bulk_load(kf_saddr(stage + {}), in{} + ({}){}, rows * {}u, kf_saddr(&stbar));",
             stageOffset(k, j), j, reduceOffset(k.iterShape, r.mask, t, false, base, n.suffix),
             share, bytes);
    }
  }
  e.closeScope();
}

} // namespace

void writeStageSetup(Emitter &e, const KernelSpec &k, const StageNames &n,
                     const std::string &firstBase) {
  e.line("// Each row group's cached inputs (this CTA's share) come into `stage` by the bulk");
  e.line("// copy engine one group ahead, completing on stbar (stph: its phase to wait for).");
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
  const ReduceSpec &r = *k.reduce();
  size_t size = dtypeSize(k.inputs[j].type.dtype);
  std::string row = r.rowsPerBlock() > 1 ? fmt::format("r * {}u + ", r.colsPerCta()) : "";
  return fmt::format("stage + {} + ({}(unsigned){}) * {}u", stageOffset(k, j), row, q0, size);
}

void writeStageNext(Emitter &e, const KernelSpec &k, const StageNames &n,
                    const std::string &nextBase) {
  e.line("__syncthreads(); // every thread's vectors are out of `stage` before it is refilled");
  writeCopies(e, k, n, nextBase);
}

} // namespace kfuse::codegen
