// kfuse-provides: kf_decode_epilogue kf_decode_gather kf_decode_wsum kf_decode_tile kf_sk_start kf_sk_owner kf_decode_part kf_gemm_decode
// kfuse-requires: smem_addr.cuh cp_async.cuh ldmatrix.cuh mma_sync.cuh tile_load.cuh tma.cuh

// ---- Small-M (decode) tensor-core GEMM: C[M <= 16, N] = A[M, K] B[K, N] (+ epilogue).
// Grid: x = GX CTAs (clusters) over the NT BN-column tiles of C, y = KS slices of K (one
// thread-block cluster of KS CTAs along y when KS > 1, sm_90 only), z = batch. With GX < NT
// the grid is persistent: CTA x takes column tiles x, x + GX, ... and its ring runs on
// across them, so the next tile's weights stream in while this one's partial sums meet and
// its epilogue runs (no pipeline fill per tile). Each CTA streams its BK x BN weight tiles
// exactly once through an ST-stage cp.async ring, A's M x BK slice (tiny, from L2) beside
// them; its WARPS warps split each stage's BK into k16 steps and keep f32 accumulators for
// all BN columns: ldmatrix A (the 16-row fragment's rows >= M are zeros, never loaded) and
// B (.trans for B as [K, N]), mma.sync m16n8k16. The warps' partials meet in shared memory
// (the ring's, or their own region after it when the grid is persistent), the cluster's
// through distributed shared memory: rank r sums a 1/KS share of the M x BN results over
// every rank (in rank order: deterministic) and applies the epilogue to each exactly once.
// No global workspace, no atomics, except with SK (stream-K, one matrix, KS = 1): the NT x KT
// (column tile, k tile) units are cut into GX equal contiguous ranges, one per CTA, so every
// CTA streams the same bytes however the tiles divide; a column tile cut between CTAs has
// each one's partial sum in the workspace `ws`, and the last to arrive (a counter per tile)
// adds them in CTA order (deterministic) and applies the epilogue. No CTA waits on another.

// Applies the epilogue to elements [e0, e1) (e = m * BN + column) of this CTA's M x BN
// result, sum(e) giving each one's accumulated value, PER elements per thread: all of a
// thread's values before any store, so the epilogue's global loads (bias, residual) are in
// flight together rather than one L2 round trip per element.
template <int PER, int BN, int N, int THREADS, class Epi, class Sum>
static __device__ __forceinline__ void kf_decode_epilogue(int e0, int e1, int n0, unsigned long long cbase, const Epi &epi, const Sum &sum) {
  // An element past e1 or N takes the last one's inputs and is never stored: no branch, so
  // the compiler issues every load up front.
  typename Epi::vals v[PER];
#pragma unroll
  for (int p = 0; p < PER; ++p) {
    const int e = min(e0 + (int)threadIdx.x + p * THREADS, e1 - 1), n = min(n0 + e % BN, N - 1);
    v[p] = epi.value(cbase + (unsigned long long)(e / BN) * N + n, sum(e));
  }
#pragma unroll
  for (int p = 0; p < PER; ++p) {
    const int e = e0 + (int)threadIdx.x + p * THREADS, n = n0 + e % BN;
    if (e < e1 && n < N)
      epi.store(cbase + (unsigned long long)(e / BN) * N + n, v[p]);
  }
}

// The warps' partials of one column tile (their k16 steps' accumulators `acc`) into `red`
// ([WARPS][M][BN + 8] floats), `acc` zeroed for the next tile; every warp is done with `red`'s
// previous contents first. Then kf_decode_wsum(red, e): element e (= m * BN + column)
// summed over the warps in warp order.
template <int M, int BN, int WARPS>
static __device__ __forceinline__ void kf_decode_gather(float *red, float (&acc)[BN / 8][4]) {
  constexpr int NI = BN / 8, LDR = BN + 8, EP = M * LDR;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t4 = lane % 4;
  __syncthreads();
#pragma unroll
  for (int j = 0; j < NI; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = g + h * 8;
      if (m < M)
        *reinterpret_cast<float2 *>(red + warp * EP + m * LDR + j * 8 + t4 * 2) =
            make_float2(acc[j][2 * h], acc[j][2 * h + 1]);
      acc[j][2 * h] = acc[j][2 * h + 1] = 0.0f;
    }
  __syncthreads();
}
template <int M, int BN, int WARPS> static __device__ __forceinline__ float kf_decode_wsum(const float *red, int e) {
  constexpr int LDR = BN + 8, EP = M * LDR;
  const int at = e / BN * LDR + e % BN;
  float v = red[at];
#pragma unroll
  for (int w = 1; w < WARPS; ++w)
    v += red[w * EP + at];
  return v;
}

// The end of one column tile of kf_gemm_decode (columns n0.., its k tiles all accumulated in
// `acc`): the warps' partials gathered in `red`, summed over warps and (KS > 1) over the
// cluster's ranks, the epilogue applied once per element; `acc` is zeroed for the next tile.
// Without LOOP `red` is the ring, drained first.
template <int M, int BN, int N, int WARPS, int KS, bool LOOP, class Epi>
static __device__ __forceinline__ void kf_decode_tile(float *red, float (&acc)[BN / 8][4], int n0, int rank,
                                                      unsigned long long cbase, const Epi &epi) {
  constexpr int THREADS = 32 * WARPS, E = M * BN, LDR = BN + 8;
  const int tid = threadIdx.x;
  if (!LOOP)
    kf_cp_wait<0>(); // every warp is done with the ring (without LOOP it holds the partials)
  kf_decode_gather<M, BN, WARPS>(red, acc);
  if (KS == 1) {
    kf_decode_epilogue<(E + THREADS - 1) / THREADS, BN, N, THREADS>(0, E, n0, cbase, epi,
                                                                   [&](int e) { return kf_decode_wsum<M, BN, WARPS>(red, e); });
  } else {
    auto at = [](int e) { return e / BN * LDR + e % BN; }; // element e = m * BN + col of red
    // This CTA's partial into red[at(e)]: only its owner thread reads and writes it.
    for (int e = tid; e < E; e += THREADS)
      red[at(e)] = kf_decode_wsum<M, BN, WARPS>(red, e);
    kf_cluster_sync(); // every rank's partial is complete and visible to the cluster
    constexpr int EPR = (E + KS - 1) / KS;
    unsigned base[KS];
#pragma unroll
    for (int q = 0; q < KS; ++q)
      base[q] = kf_cluster_addr(kf_saddr(red), q);
    kf_decode_epilogue<(EPR + THREADS - 1) / THREADS, BN, N, THREADS>(rank * EPR, min(E, (rank + 1) * EPR), n0, cbase, epi, [&](int e) {
      float v = 0.0f;
#pragma unroll
      for (int q = 0; q < KS; ++q)
        v += kf_ld_cluster_f32(base[q] + 4u * at(e));
      return v;
    });
    // No CTA exits (freeing its shared memory) or writes its next tile's partials while
    // others still read these. The reads are complete (their values are used above), so the
    // arrive needs no release.
    kf_cluster_sync_relaxed();
  }
}

// Stream-K (SK): the CTA taking unit u of U = NT x KT units over a grid of GX (ranges
// [U b / GX, U (b + 1) / GX), each at least one unit).
template <long long U, int GX> static __device__ __forceinline__ int kf_sk_start(int b) { return (int)(U * b / GX); }
template <long long U, int GX> static __device__ __forceinline__ int kf_sk_owner(int u) {
  int b = (int)((long long)u * GX / U);
  while (b + 1 < GX && kf_sk_start<U, GX>(b + 1) <= u) ++b;
  while (b > 0 && kf_sk_start<U, GX>(b) > u) --b;
  return b;
}

// The end of this CTA's share of column `tile` (SK) when it is not the whole tile: the
// warps' partials summed into its slot of the workspace (slot 2b for a CTA's first tile, 2b +
// 1 for its last), then a ticket on the tile's counter. The CTA that arrives last (every
// other share is in the workspace) sums the shares in CTA order, applies the epilogue and
// resets the counter for the next launch. `ws`: NT counters (padded to 16 bytes), then 2 GX
// slots of M x BN floats (KernelParam::Workspace, zeroed once by the runtime).
template <int M, int BN, int N, int WARPS, int KT, int NT, int GX, class Epi>
static __device__ __forceinline__ void kf_decode_part(float *red, float (&acc)[BN / 8][4], int tile, void *ws,
                                                      unsigned long long cbase, const Epi &epi) {
  constexpr int THREADS = 32 * WARPS, E = M * BN;
  constexpr long long U = (long long)NT * KT;
  __shared__ int sk_last;
  const int tid = threadIdx.x;
  unsigned *const ctr = static_cast<unsigned *>(ws);
  float *const slots = reinterpret_cast<float *>(ctr + (NT + 3) / 4 * 4);
  auto slot = [&](int b) { return slots + (size_t)(2 * b + (tile == kf_sk_start<U, GX>(b) / KT ? 0 : 1)) * E; };
  kf_decode_gather<M, BN, WARPS>(red, acc);
  float *const mine = slot(blockIdx.x);
  for (int e = tid; e < E; e += THREADS)
    __stcg(mine + e, kf_decode_wsum<M, BN, WARPS>(red, e));
  __threadfence(); // this CTA's share is visible device-wide before its ticket
  __syncthreads();
  const int b0 = kf_sk_owner<U, GX>(tile * KT), b1 = kf_sk_owner<U, GX>(tile * KT + KT - 1);
  if (tid == 0) {
    const unsigned prev = atomicAdd(ctr + tile, 1u);
    sk_last = prev == (unsigned)(b1 - b0);
    if (sk_last)
      ctr[tile] = 0u; // every share has arrived: ready for the next launch
  }
  __syncthreads();
  if (!sk_last)
    return;
  __threadfence(); // the other CTAs' shares, made visible before their tickets
  kf_decode_epilogue<(E + THREADS - 1) / THREADS, BN, N, THREADS>(0, E, tile * BN, cbase, epi, [&](int e) {
    float v = 0.0f;
    for (int b = b0; b <= b1; ++b)
      v += __ldcg(slot(b) + e);
    return v;
  });
}

// TMB (sm_90): B arrives by TMA instead, one thread issuing each stage's boxes (128-byte
// swizzle: 64 columns of [K, N] x BK rows, or 64 of K x BN rows of [N, K]) on the stage's
// mbarrier, `zb` its matrix in the tensor map; ldmatrix then reads the swizzled rows.
template <int DT, int M, int N, int K, bool TA, bool TB, int BN, int BK, int ST, int WARPS, int KS, bool TMB, int GX, bool SK, class Epi>
static __device__ __forceinline__ void kf_gemm_decode(const unsigned short *__restrict__ A, const unsigned short *__restrict__ B,
                                                      const kf_tmap *tmB, int zb, unsigned long long cbase, const Epi &epi,
                                                      void *ws) {
  constexpr int THREADS = 32 * WARPS, NI = BN / 8, KSW = BK / 16 / WARPS;
  static_assert(M >= 1 && M <= 16 && BN % 16 == 0 && BK % (16 * WARPS) == 0 && KS >= 1 && ST >= 2, "decode tile");
  constexpr int MC = (M + 7) / 8 * 8; // A^T: its M columns rounded up to whole 8-element chunks
  constexpr int A_R = TA ? BK : 16, A_C = TA ? 16 : BK, A_LD = A_C + 8;
  constexpr int B_R = TB ? BN : BK, B_C = TB ? BK : BN, B_LD = B_C + 8;
  constexpr int A_ST = A_R * A_LD, B_ST = B_R * B_LD;
  constexpr int KT = (K + BK - 1) / BK, KTC = (KT + KS - 1) / KS;
  constexpr int B_TMA = BK * BN; // elements of a TMA stage (dense, swizzled)
  constexpr int NT = (N + BN - 1) / BN;
  constexpr bool LOOP = SK || GX < NT; // persistent: the ring runs on across column tiles
  static_assert(GX >= 1, "decode grid");
  static_assert(!SK || (KS == 1 && (long long)NT * KT >= GX), "stream-K: no K split, a unit per CTA at least");
  static_assert(LOOP || WARPS * M * (BN + 8) * 4 <= ST * (A_ST + (TMB ? B_TMA : B_ST)) * 2, "the partial sums reuse the ring");
  static_assert(!TMB || (BN % 64 == 0 && BK % 64 == 0), "TMA boxes are 64 elements wide");
  extern __shared__ __align__(16) unsigned short kf_smem[];
  // cp.async: A's ring, then B's. TMA: B's ring at the first 1 KB boundary (the swizzle
  // atom), A's after it, then one mbarrier per stage.
  unsigned short *const aligned = kf_smem + (TMB ? ((1024u - (kf_saddr(kf_smem) & 1023u)) & 1023u) / 2 : 0);
  unsigned short *sA = TMB ? aligned + ST * B_TMA : kf_smem, *sB = TMB ? aligned : kf_smem + ST * A_ST;
  const unsigned bars = kf_saddr(sA + ST * A_ST);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int rank = KS > 1 ? (int)kf_cluster_rank() : 0;
  const int kt0 = rank * KTC, nt = min(KT, kt0 + KTC) - kt0; // this CTA's k tiles of a column tile
  // This CTA's column tiles: blockIdx.x, + GX, ... (one without LOOP); its ring runs over
  // their k tiles in order, f = u * nt + k tile.
  const int units = LOOP ? (NT - 1 - (int)blockIdx.x) / GX + 1 : 1; // GX < NT: every CTA has one
  // SK: this CTA's units u0 .. u0 + total - 1, unit u being k tile u % KT of column tile u / KT.
  const int u0 = SK ? kf_sk_start<(long long)NT * KT, GX>(blockIdx.x) : 0;
  const int total = SK ? kf_sk_start<(long long)NT * KT, GX>(blockIdx.x + 1) - u0 : units * nt;
  auto col0 = [&](int u) { return ((int)blockIdx.x + u * GX) * BN; };
  // The fragment rows >= M (A^T: whole chunks of columns >= M) are never loaded: zero them
  // once in every stage. No overlap with what the loads write, so no barrier before them.
  if (TA) {
    if (MC < 16)
      for (int r = tid; r < ST * BK; r += THREADS)
        *reinterpret_cast<uint4 *>(sA + r * A_LD + 8) = make_uint4(0, 0, 0, 0);
  } else {
    constexpr int Z = (16 - M) * A_LD / 8; // 16-byte chunks per stage
    for (int i = tid; i < ST * Z; i += THREADS)
      *reinterpret_cast<uint4 *>(sA + (i / Z) * A_ST + M * A_LD + (i % Z) * 8) = make_uint4(0, 0, 0, 0);
  }
  if constexpr (TMB) {
    if (tid == 0) {
      for (int s = 0; s < ST; ++s)
        kf_mbar_init(bars + 8 * s, 1); // the issuing thread's arrive, plus the stage's bytes
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
  }
  auto load = [&](int s, int f) {
    const int k0 = SK ? (u0 + f) % KT * BK : (kt0 + f % nt) * BK, n0 = SK ? (u0 + f) / KT * BN : col0(f / nt);
    if (TA)
      kf_tile_load<unsigned short, BK, MC, A_LD, K, M, THREADS>(sA + s * A_ST, A, k0, 0);
    else
      kf_tile_load<unsigned short, M, BK, A_LD, M, K, THREADS>(sA + s * A_ST, A, 0, k0);
    if constexpr (TMB) {
      if (tid == 0) {
        const unsigned bar = bars + 8 * s, dst = kf_saddr(sB + s * B_TMA);
        kf_mbar_expect(bar, BK * BN * 2);
        if (TB) {
#pragma unroll
          for (int h = 0; h < BK / 64; ++h)
            kf_tma3(dst + h * BN * 128, tmB, k0 + 64 * h, n0, zb, bar);
        } else {
#pragma unroll
          for (int j = 0; j < BN / 64; ++j)
            kf_tma3(dst + j * BK * 128, tmB, n0 + 64 * j, k0, zb, bar);
        }
      }
    } else if (TB) {
      kf_tile_load<unsigned short, BN, BK, B_LD, N, K, THREADS>(sB + s * B_ST, B, n0, k0);
    } else {
      kf_tile_load<unsigned short, BK, BN, B_LD, K, N, THREADS>(sB + s * B_ST, B, k0, n0);
    }
  };
  // Byte offset of (row, col) in a swizzled TMA stage of boxes `boxBytes` apart, 64 columns
  // (128 bytes) per box row: the 16-byte chunk index is XORed with the row within 8.
  auto swz = [](int row, int col, int boxBytes) {
    return (col / 64) * boxBytes + row * 128 + ((((col % 64) / 8) ^ (row & 7)) << 4);
  };
  float acc[NI][4];
#pragma unroll
  for (int j = 0; j < NI; ++j)
#pragma unroll
    for (int q = 0; q < 4; ++q)
      acc[j][q] = 0.0f;
#pragma unroll
  for (int s = 0; s < ST - 1; ++s) {
    if (s < total)
      load(s, s);
    kf_cp_commit();
  }
  // The warps' partial sums (kf_decode_tile): without LOOP they reuse the ring once it is
  // drained; with it, their own region after the ring (and TMA's mbarriers).
  float *const red = reinterpret_cast<float *>(
      LOOP ? (TMB ? sA + ST * A_ST + (8 * ST + 15) / 16 * 8 : sB + ST * B_ST) : aligned);
  const int mat = lane / 8, r8 = lane % 8;
  for (int i = 0; i < total; ++i) {
    kf_cp_wait<ST - 2>();
    __syncthreads(); // tile i landed for all; every warp is done with tile i-1's stage
    if constexpr (TMB)
      kf_mbar_wait(bars + 8 * (i % ST), (i / ST) & 1);
    if (i + ST - 1 < total)
      load((i + ST - 1) % ST, i + ST - 1);
    kf_cp_commit();
    const unsigned short *a = sA + (i % ST) * A_ST, *b = sB + (i % ST) * (TMB ? B_TMA : B_ST);
    const unsigned bs = kf_saddr(b);
#pragma unroll
    for (int w = 0; w < KSW; ++w) {
      const int kk = (w * WARPS + warp) * 16;
      unsigned af[4], bf[NI][2];
      if (TA)
        kf_ldm4t(af, kf_saddr(a + (kk + (mat >> 1) * 8 + r8) * A_LD + (mat & 1) * 8));
      else
        kf_ldm4(af, kf_saddr(a + ((mat & 1) * 8 + r8) * A_LD + kk + (mat >> 1) * 8));
#pragma unroll
      for (int j = 0; j < NI; j += 2) {
        unsigned r[4];
        if (TB && TMB)
          kf_ldm4(r, bs + swz(j * 8 + (mat >> 1) * 8 + r8, kk + (mat & 1) * 8, BN * 128));
        else if (TMB)
          kf_ldm4t(r, bs + swz(kk + (mat & 1) * 8 + r8, j * 8 + (mat >> 1) * 8, BK * 128));
        else if (TB)
          kf_ldm4(r, kf_saddr(b + (j * 8 + (mat >> 1) * 8 + r8) * B_LD + kk + (mat & 1) * 8));
        else
          kf_ldm4t(r, kf_saddr(b + (kk + (mat & 1) * 8 + r8) * B_LD + j * 8 + (mat >> 1) * 8));
        bf[j][0] = r[0];
        bf[j][1] = r[1];
        bf[j + 1][0] = r[2];
        bf[j + 1][1] = r[3];
      }
#pragma unroll
      for (int j = 0; j < NI; ++j)
        kf_mma<DT>(acc[j], af, bf[j]);
    }
    if constexpr (SK) {
      const int u = u0 + i, tile = u / KT;
      if (u % KT == KT - 1 || i == total - 1) { // the end of this CTA's share of a column tile
        if (u % KT == KT - 1 && u0 <= tile * KT)
          kf_decode_tile<M, BN, N, WARPS, 1, true>(red, acc, tile * BN, 0, cbase, epi);
        else
          kf_decode_part<M, BN, N, WARPS, KT, NT, GX>(red, acc, tile, ws, cbase, epi);
      }
    } else if (i % nt == nt - 1) {
      kf_decode_tile<M, BN, N, WARPS, KS, LOOP>(red, acc, col0(i / nt), rank, cbase, epi);
    }
  }
}
