#include "codegen/ReduceCrossCta.h"

#include "codegen/Emitter.h"
#include "codegen/ScalarExpr.h"
#include "ir/Reduction.h"

#include <algorithm>

namespace kfuse::codegen {

const char *partialCombineName(OpKind k) {
  return k == OpKind::Amax ? "max" : k == OpKind::Amin ? "min" : "sum";
}

std::string partialCombine(OpKind k, const std::string &a, const std::string &b) {
  if (k == OpKind::Amax)
    return fmt::format("kf_max({}, {})", a, b);
  if (k == OpKind::Amin)
    return fmt::format("kf_min({}, {})", a, b);
  return fmt::format("{} + {}", a, b);
}

namespace {

unsigned phaseSlots(const ReduceSpec &r) { return std::max(1u, r.phaseReductions); }

/// A cluster: every CTA pushes its partials of a phase into every CTA's `redx` (st.async),
/// each counted on the receiver's mbarrier, and waits on its own mbarrier for all of them.
/// Two buffers alternate by phase: a CTA reaches phase p + 2, which reuses phase p's buffer,
/// only after every CTA pushed its partials of phase p + 1, that is after each of them read
/// phase p's. So no barrier follows the reads, and none precedes the pushes.
void writeClusterSetup(Emitter &e, const ReduceSpec &r) {
  const unsigned C = r.cluster, P = phaseSlots(r);
  e.line("// A cluster of {} CTAs per row, each holding {} of its elements. Each phase, every", C,
         r.colsPerCta());
  e.line("// CTA pushes its partials into every CTA's redx, counted on that CTA's mbarrier; two");
  e.line("// buffers, alternating by phase (xph: the phases combined so far).");
  e.line("const unsigned rank = kf_cluster_rank();");
  e.line("__shared__ float redx[{}];", 2 * C * P);
  e.line("__shared__ unsigned long long mbx[2];");
  e.openScope("if (threadIdx.x == 0)");
  e.line("kf_mbar_init(kf_saddr(&mbx[0]), 1u);");
  e.line("kf_mbar_init(kf_saddr(&mbx[1]), 1u);");
  e.line("kf_fence_mbar_init();");
  e.closeScope();
  e.line("kf_cluster_sync(); // every CTA's mbarriers exist before a partial reaches them");
  e.line("unsigned xph = 0u;");
}

void writeClusterCombine(Emitter &e, const ReduceSpec &r, const std::vector<RowPartial> &parts) {
  const unsigned C = r.cluster, P = phaseSlots(r);
  e.openScope("");
  e.line("const unsigned b = xph & 1u;");
  e.line("if (threadIdx.x == 0) kf_mbar_expect(kf_saddr(&mbx[b]), {}u);",
         C * static_cast<unsigned>(parts.size()) * 4);
  e.openScope("if (threadIdx.x < {}u)", C);
  e.line("const unsigned bar = kf_cluster_addr(kf_saddr(&mbx[b]), threadIdx.x);");
  for (size_t q = 0; q < parts.size(); ++q)
    e.line("kf_st_async_f32(kf_cluster_addr(kf_saddr(&redx[(b * {}u + {}u) * {}u + rank]), "
           "threadIdx.x), {}, bar);",
           P, q, C, parts[q].var);
  e.closeScope();
  e.line("kf_mbar_wait(kf_saddr(&mbx[b]), (xph >> 1) & 1u);");
  for (size_t q = 0; q < parts.size(); ++q) {
    const std::string slot = fmt::format("redx[(b * {}u + {}u) * {}u", P, q, C);
    e.line("{} = {}];", parts[q].var, slot);
    e.line("for (unsigned c = 1; c < {}u; ++c) {} = {};", C, parts[q].var,
           partialCombine(parts[q].kind, parts[q].var, slot + " + c]"));
  }
  e.line("++xph;");
  e.closeScope();
}

/// A split row: the CTA's rank among its row's CTAs, its group's arrival counter and the
/// partials' buffers in the workspace `ws`.
void writeSplitSetup(Emitter &e, const ReduceSpec &r) {
  const unsigned G = r.split;
  e.line("// {} CTAs per row across the grid, each taking {} of its elements{}; their", G,
         r.colsPerCta(), r.cache ? " in registers" : "");
  e.line("// partials meet in the workspace (a counter per group of CTAs, then two buffers).");
  e.line("const unsigned rank = blockIdx.x % {}u;", G);
  e.line("unsigned long long *const ctr = static_cast<unsigned long long *>(ws) + blockIdx.x / "
         "{}u;",
         G);
  e.line("float *const part = reinterpret_cast<float *>(static_cast<unsigned long long *>(ws) + "
         "{}) + (blockIdx.x - rank) * {}u;",
         r.workspaceCounters(), phaseSlots(r));
  e.line("unsigned buf = 0; // the partials' buffer of this phase (0 or 1)");
  e.line("__shared__ float redc[{}];", phaseSlots(r));
}

/// Each CTA's partial into the workspace, the group's barrier, then every partial combined
/// in rank order (lanes of warp 0 strided over the ranks, then a butterfly: a fixed order),
/// the result shared through redc.
void writeSplitCombine(Emitter &e, const ReduceSpec &r, const std::vector<RowPartial> &parts) {
  const unsigned G = r.split, P = phaseSlots(r);
  const std::string buffer = fmt::format("part + buf * {}ull", r.workspacePartials());
  e.openScope("if (threadIdx.x == 0)");
  for (size_t q = 0; q < parts.size(); ++q)
    e.line("({})[rank * {}u + {}] = {};", buffer, P, q, parts[q].var);
  e.closeScope();
  e.line("kf_group_sync(ctr, {}u);", G);
  e.openScope("if (threadIdx.x < 32)");
  for (size_t q = 0; q < parts.size(); ++q) {
    OpKind kind = parts[q].kind;
    e.line("float g{} = {};", q, floatLiteral(static_cast<float>(reductionIdentity(kind))));
    e.line("for (unsigned c = threadIdx.x; c < {}u; c += 32u) g{} = {};", G, q,
           partialCombine(kind, fmt::format("g{}", q),
                          fmt::format("kf_ld_partial({} + c * {}u + {})", buffer, P, q)));
    e.line("g{0} = kf_warp_{1}<32>(g{0});", q, partialCombineName(kind));
    e.line("if (threadIdx.x == 0) redc[{}] = g{};", q, q);
  }
  e.closeScope();
  e.line("__syncthreads();");
  for (size_t q = 0; q < parts.size(); ++q)
    e.line("{} = redc[{}];", parts[q].var, q);
  e.line("buf ^= 1u;");
}

} // namespace

void writeCrossCtaSetup(Emitter &e, const ReduceSpec &r) {
  if (r.cluster > 1)
    writeClusterSetup(e, r);
  else if (r.split > 1)
    writeSplitSetup(e, r);
}

void writeCrossCtaCombine(Emitter &e, const ReduceSpec &r, const std::vector<RowPartial> &parts) {
  if (r.cluster > 1)
    writeClusterCombine(e, r, parts);
  else if (r.split > 1)
    writeSplitCombine(e, r, parts);
}

void writeCrossCtaEnd(Emitter &e, const ReduceSpec &r) {
  // No CTA leaves while a partial it pushed may still be on its way.
  if (r.cluster > 1)
    e.line("kf_cluster_sync_relaxed();");
}

} // namespace kfuse::codegen
