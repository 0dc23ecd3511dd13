#pragma once
/// The small-M ("decode", M <= 16) tensor-core GEMM: one 16-row mma.sync tile (rows >= M
/// zero) streams each weight byte once through a cp.async ring; on sm_90 the K dimension is
/// split over the CTAs of a thread-block cluster whose f32 partials meet in distributed
/// shared memory before the epilogue. Kept apart from GemmSpec/GemmCodegen so that the
/// other kernels' files stay small: the spec code calls chooseDecode / decodeSharedBytes /
/// decodeDescribe, the emitter decodeKernelAttributes / decodeGemmCall. The device template
/// kf_gemm_decode is codegen/cuda/gemm_decode.cuh.
#include "codegen/GemmSpec.h"

#include <string>

namespace kfuse::codegen {

/// Whether the decode kernel serves this problem on `target` (f16/bf16, sm >= 80, M <= 16).
bool decodeApplies(const GemmSpec &s, const Target &target);
/// Fills the tile, stages, warps, cluster split (s.ks), grid (s.ctas) and `why` of a Decode
/// spec.
void chooseDecode(GemmSpec &s, const Target &target);
/// A Decode spec with BN columns per CTA, BK of K per stage (128 or 256; BK / 16 must
/// divide by `warps`), `stages`, a K split over `ks` CTAs and `warps` warps.
/// With `tma` (decodeTmaValid), B streams through the bulk tensor copy engine. The grid along
/// x (s.ctas): one CTA (cluster) per column tile, or for one matrix whose column tiles
/// outnumber the clusters (of 1 or 2 CTAs) the device holds at once, that many, persistent.
void configureDecode(GemmSpec &s, const Target &target, unsigned bn, unsigned bk, unsigned stages,
                     unsigned ks, unsigned warps, bool tma);
/// The same as stream-K over as many CTAs as the device holds at once (s.streamK): false,
/// leaving `s` configured without it, for a batch or fewer than two units per CTA. An
/// autotune candidate (gemmCandidates); chooseDecode does not pick it.
bool configureDecodeStreamK(GemmSpec &s, const Target &target, unsigned bn, unsigned bk,
                            unsigned stages, unsigned warps, bool tma);
/// Whether B can stream by TMA on `target`: sm_90, 16-byte rows, TMA's size limits.
bool decodeTmaValid(const GemmSpec &s, const Target &target);
/// Whether K can be split over a cluster of `ks` CTAs on `target` with BK of K per stage (no
/// rank without work).
bool decodeSplitValid(const GemmSpec &s, const Target &target, unsigned ks, unsigned bk);
size_t decodeSharedBytes(const GemmSpec &s);
/// BN-column tiles of one matrix of C (at least 1).
unsigned decodeColumnTiles(const GemmSpec &s);
/// Whether the grid is persistent: fewer CTAs along x (s.ctas) than column tiles, each CTA
/// taking several in turn with its ring streaming on.
bool decodeLoops(const GemmSpec &s);
/// Stream-K (s.streamK): (column tile, k tile) units of the one matrix, cut evenly over
/// s.ctas CTAs.
uint64_t decodeStreamUnits(const GemmSpec &s);
/// The stream-K workspace: a counter per column tile (padded to 16 bytes), then two M x BN
/// f32 slots per CTA (its first and last column tile's shares); 0 without stream-K.
uint64_t decodeWorkspaceBytes(const GemmSpec &s);
/// Bytes of every warp's M x BN partial sums (rows padded to BN + 8 floats), which reuse the
/// ring: a configuration is valid only where they fit in it (kf_gemm_decode's static_assert).
size_t decodePartialBytes(const GemmSpec &s);
std::string decodeDescribe(const GemmSpec &s);

/// Extra attributes of the __global__ function: " __cluster_dims__(1, KS, 1)" when split.
std::string decodeKernelAttributes(const GemmSpec &s);
/// The template call, given the common leading template arguments ("DT, M, N, K, TA"),
/// the epilogue functor type and the call arguments.
std::string decodeGemmCall(const GemmSpec &s, const std::string &head, const std::string &epiType,
                           const std::string &args);

} // namespace kfuse::codegen
