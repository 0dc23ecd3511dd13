#include "codegen/GemmTuning.h"

#include "codegen/DecodeGemm.h"

#include <array>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kfuse::codegen {

std::string gemmProblemKey(const GemmSpec &s, const Target &t) {
  return fmt::format("{}{}{} {}{} M={} N={} K={} batch=[{}] A=[{}] B=[{}] on {} x{} pairs={}",
                     dtypeName(s.dtype), s.dtype == DType::F32 && s.allowTf32 ? " tf32" : "",
                     s.dual ? " x2" : "",
                     s.transA ? 'T' : 'N', s.transB ? 'T' : 'N', s.M, s.N, s.K,
                     fmt::join(s.batchShape, ","), fmt::join(s.strideA, ","),
                     fmt::join(s.strideB, ","), compileArch(t), t.smCount, t.pairs());
}

std::vector<GemmSpec> gemmCandidates(const GemmSpec &chosen, const Target &t) {
  std::vector<GemmSpec> out{chosen};
  auto add = [&](const GemmSpec &c) {
    if (c.sharedBytes() > t.sharedPerBlock())
      return;
    for (const GemmSpec &o : out)
      if (o.describe() == c.describe())
        return;
    out.push_back(c);
  };
  GemmSpec c = chosen;
  switch (chosen.kernel) {
  case GemmKernel::Decode:
    // 64 or 128 columns per CTA, K over 1-8 CTAs, 4 or 8 warps; B by cp.async (BK 128, 3-6
    // stages) or by TMA (3-8 stages, BK 128, or 256 with 8 warps: 4 k16 steps per warp and
    // stage at most, which bounds the candidates NVRTC compiles);
    // the partial sums of every warp must fit in the ring they reuse (kf_gemm_decode's
    // static_assert). (2 stages measured 10-80% slower on the H200.)
    for (bool tma : {false, true})
      for (unsigned bn : {64u, 128u})
        for (unsigned bk : {128u, 256u})
          for (unsigned stages : {3u, 4u, 6u, 8u})
            for (unsigned ks : {1u, 2u, 4u, 8u})
              for (unsigned warps : {4u, 8u}) {
                if ((!tma && (bk != 128 || stages > 6)) || (bk == 256 && warps != 8) ||
                    !decodeSplitValid(chosen, t, ks, bk) || (tma && !decodeTmaValid(chosen, t)))
                  continue;
                configureDecode(c, t, bn, bk, stages, ks, warps, tma);
                if (decodePartialBytes(c) <= c.sharedBytes())
                  add(c);
              }
    // And the chosen tile as stream-K over the CTAs the device holds (one matrix, at least
    // two units per CTA), which the heuristic never picks.
    c = chosen;
    if (configureDecodeStreamK(c, t, chosen.bn, chosen.bk, chosen.stages, chosen.warpsN,
                               chosen.tensorMaps() > 0))
      add(c);
    break;
  case GemmKernel::Wgmma:
    // A dual kernel's two products take the registers of a tile twice as wide: BN of 64 or
    // 128, alone (no ping-pong, no cluster).
    for (unsigned wgc : {1u, 2u})
      for (unsigned bn : chosen.dual ? std::array<unsigned, 2>{64u, 128u}
                                     : std::array<unsigned, 2>{128u, 256u})
        for (unsigned stages = 3; stages <= 8; ++stages) {
          if (wgc == 2 && chosen.M <= 64)
            continue; // the second consumer would have no rows
          if (chosen.dual) {
            configureWgmma(c, t, wgc, bn, stages);
            add(c);
            continue;
          }
          // Each also with B shared by 2-CTA clusters where there are two M-tiles to pair.
          for (unsigned cl : {1u, 2u}) {
            if (cl == 2 && (wgc != 2 || chosen.M <= 128))
              continue;
            configureWgmma(c, t, wgc, bn, stages, false, cl);
            add(c);
            if (wgc == 2 && bn == 128) { // and the two consumers in turn on 128x128 tiles
              configureWgmma(c, t, wgc, bn, stages, true, cl);
              add(c);
            }
          }
        }
    break;
  case GemmKernel::TensorCore:
    for (bool big : {true, false})
      for (unsigned stages : {3u, 4u}) {
        configureTensorCore(c, t, big, stages);
        add(c);
      }
    break;
  case GemmKernel::Simt:
  case GemmKernel::Gemv:
    break; // one configuration each
  }
  return out;
}

void applyTuning(GemmSpec &s, const Target &t, const GemmTuning &tuning) {
  auto it = tuning.byProblem.find(gemmProblemKey(s, t));
  if (it == tuning.byProblem.end())
    return;
  for (const GemmSpec &c : gemmCandidates(s, t))
    if (c.describe() == it->second.config) {
      s = c;
      s.why = it->second.why;
      return;
    }
}

} // namespace kfuse::codegen
