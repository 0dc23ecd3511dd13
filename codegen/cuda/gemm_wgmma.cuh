// Warp-specialised Hopper GEMM. Warpgroup 0 is the producer: one thread waits for a free
// stage (its `empty` mbarrier), announces the stage's bytes on its `full` mbarrier and
// issues the TMA copies (128-byte swizzle; out-of-range rows and columns arrive as zeros,
// so M, N and K need not be tile multiples). Warpgroups 1..WGC are consumers of 64 rows each:
// they wait on `full`, issue BK/16 wgmma m64nBNk16 from the two shared-memory descriptors,
// and free the previous stage once its wgmma group is done (one arrival per warp), so one
// group stays in flight. K-major operands (A [M,K], B
// [N,K]) are rows of 128 bytes, 8-row atoms 1024 bytes apart (SBO), k16 steps 32 bytes
// along the row; M/N-major operands (A^T stored [K,M], B stored [K,N]) are boxes of 64
// M/N columns x 64 K rows, 8 KB apart along M/N (LBO), 8-row atoms 1024 bytes apart along
// K (SBO), k16 steps 2 KB, with the instruction's transpose bit set. The accumulators go
// through the epilogue functor per element, in registers, before the only store of C; a
// single 16-bit output is staged per warp in shared memory and stored in 16-byte pieces,
// any other outputs stored directly, 16 values per thread computed before their stores.
// kfuse-provides: kf_wg_value kf_wg_store8 kf_gemm_wg
// kfuse-requires: smem_addr.cuh tma.cuh wgmma.cuh

// Persistent: CTA b takes tiles b, b + gridDim.x, ... of NB batches x MT x NT tiles, in
// groups of 8 M-tiles (N inside a group) so tiles in flight share A rows and B columns in
// L2. The producer runs ahead into the next tile while the consumers store this one.
// Ping-pong (PP, two consumers): each consumer computes whole tiles, both 64-row halves
// (HALVES wgmma per k16 step), the two taking the CTA's tiles in turn; a consumer starts a
// tile's wgmma only when the other has issued all of the previous tile's (named barriers 1
// and 2), so the tensor cores work on one tile while the other consumer runs its epilogue.
// Clusters (CL = 2): the two CTAs of a cluster take M-adjacent tiles of the same columns in
// step, and each loads its own A but only half of B, multicast into both: B's L2 reads
// halve. A stage is then written by both producers, so it is free only when the consumers
// of both CTAs have released it (each consumer warp arrives on the empty barrier of every
// CTA of the cluster); each full barrier still expects the whole stage's bytes.
// Dual (DU): two products per tile, C = A B and C2 = A B2 (sibling matmuls, B2 laid out as
// B, its tensor map tmB2): a stage holds A, B's tile and B2's; each k16 step issues a wgmma
// into each accumulator set; the epilogue gets both values of an element: kf_wg_value is
// the epilogue's value at element i from accumulator x of acc (and of acc2 when dual).
// Stores 8 adjacent 16-bit values v of row m, columns n.. of C (dst: element (m, n)): one
// 16-byte piece where `vec` (N % 8 == 0, C on 16 bytes) and all 8 are inside N, else each
// element inside N; nothing past M or N.
static __device__ __forceinline__ void kf_wg_store8(unsigned short *dst, const uint4 &v, bool vec, int m, int M, int n, int N) {
  if (m < M && n < N) {
    if (vec && n + 8 <= N) {
      *reinterpret_cast<uint4 *>(dst) = v;
    } else {
      const unsigned short *e = reinterpret_cast<const unsigned short *>(&v);
      for (int q = 0; q < 8 && n + q < N; ++q)
        dst[q] = e[q];
    }
  }
}
template <bool DU, class Epi>
static __device__ __forceinline__ typename Epi::vals kf_wg_value(const Epi &epi, unsigned long long i, const float *acc, const float *acc2, int x) {
  if constexpr (DU)
    return epi.value(i, acc[x], acc2[x]);
  else
    return epi.value(i, acc[x]);
}
template <int DT, int M, int N, int K, bool TA, bool TB, int WGC, int BN, int ST, int NB, bool PP, int CL, bool DU, class Epi, class Zi>
static __device__ __forceinline__ void kf_gemm_wg(const kf_tmap *tmA, const kf_tmap *tmB, const kf_tmap *tmB2, const Zi &zidx, const Epi &epi) {
  static_assert(!PP || WGC == 2, "ping-pong takes two consumer warpgroups");
  static_assert(!DU || (!PP && CL == 1 && BN <= 128), "two products: BN <= 128, alone, not ping-pong");
  static_assert(CL == 1 || (CL == 2 && BN % 128 == 0), "B splits into CL pieces of 64-column boxes");
  static_assert(DT != 0 || (!TA && TB), "TF32 wgmma reads K-major A and B only");
  // A k step is one 128-byte swizzle row of K: 64 16-bit elements, or 32 f32 ones (DT 0,
  // read as TF32), taken 32 bytes (k16, or k8 for TF32) per wgmma.
  constexpr int BK = DT == 0 ? 32 : 64, KW = DT == 0 ? 8 : 16;
  constexpr int BM = 64 * WGC, KT = (K + BK - 1) / BK, G = 8, HALVES = PP ? WGC : 1;
  constexpr int PF = KT > 6 ? KT - 6 : 0; // the k step after which the epilogue's lines are prefetched
  // Work units: groups of CL M-adjacent tiles (one per CTA of a cluster), MG of them along M.
  constexpr long long MT = (M + BM - 1) / BM, MG = (MT + CL - 1) / CL, NT = (N + BN - 1) / BN, TILES = MG * NT * NB;
  constexpr unsigned A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE = A_BYTES + B_BYTES * (DU ? 2 : 1);
  extern __shared__ __align__(1024) unsigned char kf_wg_smem[];
  const unsigned base = (kf_saddr(kf_wg_smem) + 1023u) & ~1023u; // swizzle atoms need 1 KB
  // The ring, its full and empty barriers, then each consumer warp's 16 x 72 epilogue stage.
  const unsigned full = base + ST * STAGE, empty = full + 8 * ST, stage = empty + 8 * ST;
  const int wg = threadIdx.x / 128, lane = threadIdx.x % 32;
  // This CTA's cluster (its work units: cid, cid + clusters, ...) and rank in it.
  const unsigned rank = CL > 1 ? kf_cluster_rank() : 0u;
  const long long cid = blockIdx.x / CL, clusters = gridDim.x / CL;
  // Work unit t -> batch z and this CTA's tile's first row and column (a tile past M, where
  // MT is odd, computes but stores nothing).
  auto tileOf = [rank](long long t, unsigned &z, int &m0, int &n0) {
    constexpr long long GG = G / CL; // units per group: 8 M-tiles
    z = (unsigned)(t / (MG * NT));
    const long long r = t % (MG * NT), first = r / (GG * NT) * GG;
    const long long gs = MG - first < GG ? MG - first : GG, rr = r % (GG * NT);
    m0 = (int)(((first + rr % gs) * CL + rank) * BM);
    n0 = (int)(rr / gs * BN);
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < ST; ++s) {
      kf_mbar_init(full + 8 * s, 1);        // the producer's arrive, plus the stage's bytes
      kf_mbar_init(empty + 8 * s, (PP ? 4 : 4 * WGC) * CL); // one arrive per warp of its consumer(s), per CTA
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  if (CL > 1)
    kf_cluster_sync(); // no copy or arrive reaches a CTA's barriers before they exist
  else
    __syncthreads();
  if (wg == 0) {
    if (WGC == 2) // 384 threads: give the consumers' accumulators the producer's registers
      asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    if (threadIdx.x == 0) {
      unsigned it = 0; // k steps issued so far, over all tiles: stage it % ST, round it / ST
      for (long long t = cid; t < TILES; t += clusters) {
        unsigned z;
        int m0, n0;
        tileOf(t, z, m0, n0);
        const int2 zz = zidx(z); // the matrices of A and B for batch z
        for (int kt = 0; kt < KT; ++kt, ++it) {
          const unsigned s = it % ST;
          kf_mbar_wait(empty + 8 * s, ((it / ST) & 1) ^ 1); // the first round finds them free
          const unsigned sa = base + s * STAGE, sb = sa + A_BYTES, bar = full + 8 * s;
          kf_mbar_expect(bar, STAGE);
          if (!TA) {
            kf_tma3(sa, tmA, kt * BK, m0, zz.x, bar);
          } else {
#pragma unroll
            for (int j = 0; j < WGC; ++j)
              kf_tma3(sa + j * 8192, tmA, m0 + 64 * j, kt * BK, zz.x, bar);
          }
          // B: all of it, or (CL = 2) this rank's half, multicast to the cluster's CTAs.
          auto copyB = [&](const kf_tmap *tm, unsigned dst, int c0, int c1) {
            if (CL > 1)
              kf_tma3_mc(dst, tm, c0, c1, zz.y, bar, (1u << CL) - 1);
            else
              kf_tma3(dst, tm, c0, c1, zz.y, bar);
          };
#pragma unroll
          for (int p = 0; p < (DU ? 2 : 1); ++p) { // B, then (dual) B2 after it
            const kf_tmap *tm = p ? tmB2 : tmB;
            const unsigned sbp = sb + p * B_BYTES;
            if (TB) { // rows of 128 bytes: a half is BN / 2 rows (the tensor map's box)
              copyB(tm, sbp + rank * (BN / CL) * 128, kt * BK, n0 + (int)rank * (BN / CL));
            } else { // 64-column boxes, BN / 64 / CL of them per rank
#pragma unroll
              for (int q = 0; q < BN / 64 / CL; ++q) {
                const int j = (int)rank * (BN / 64 / CL) + q;
                copyB(tm, sbp + j * 8192, n0 + 64 * j, kt * BK);
              }
            }
          }
        }
      }
      // Clusters: this CTA must not exit while another's consumers may still arrive on its
      // empty barriers. Once every stage is free again (released by the consumers of every
      // CTA), none will; the other CTAs' copies into this one complete before this CTA's
      // consumers, which wait for their bytes, are done. (A cluster barrier at the end
      // instead made ptxas spill in the 40-register producer.)
      if (CL > 1)
        for (int q = 0; q < ST; ++q, ++it)
          kf_mbar_wait(empty + 8 * (it % ST), ((it / ST) & 1) ^ 1);
    }
  } else {
    if (WGC == 2)
      asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    const int c = wg - 1;
    const int w = (threadIdx.x / 32) % 4, g = lane / 4, t4 = lane % 4;
    // Stage s back to the producers, one arrive per warp on its empty barrier in every CTA
    // of the cluster (lane q on CTA q's, in parallel).
    auto release = [empty, lane](unsigned s) {
      if (CL == 1) {
        if (lane == 0)
          kf_mbar_arrive(empty + 8 * s);
      } else if (lane < CL) {
        kf_mbar_arrive_cluster(kf_cluster_addr(empty + 8 * s, lane));
      }
    };
    // This CTA's tiles; ping-pong: consumer c takes its local tiles c, c + 2, ...
    const long long mine = (TILES - cid + clusters - 1) / clusters;
    for (long long j = PP ? c : 0; j < mine; j += PP ? 2 : 1) {
      unsigned z;
      int m0, n0;
      tileOf(cid + j * clusters, z, m0, n0);
      unsigned it = (unsigned)(j * KT); // the ring position of the tile's first k step
      const unsigned long long cbase = (unsigned long long)z * M * N;
      // The first of this warp's 16 rows of C in half hf of the tile (ping-pong: both
      // halves are this consumer's; else half c, hf 0).
      auto row0Of = [&](int hf) { return m0 + (PP ? hf : c) * 64 + w * 16; };
      if (PP && j > 0) // the other consumer has issued tile j - 1's wgmma
        asm volatile("bar.sync %0, 256;\n" ::"r"(1 + c) : "memory");
      float acc[HALVES][BN / 2], acc2[HALVES][DU ? BN / 2 : 1]; // acc2: B2's product (dual)
#pragma unroll
      for (int h = 0; h < HALVES; ++h) {
#pragma unroll
        for (int i = 0; i < BN / 2; ++i)
          acc[h][i] = 0.0f;
#pragma unroll
        for (int i = 0; i < (DU ? BN / 2 : 1); ++i)
          acc2[h][i] = 0.0f;
      }
      for (int kt = 0; kt < KT; ++kt, ++it) {
        const unsigned s = it % ST;
        kf_mbar_wait(full + 8 * s, (it / ST) & 1);
        const unsigned sa = base + s * STAGE + (PP ? 0 : c * 8192), sb = base + s * STAGE + A_BYTES;
        kf_wg_fence();
#pragma unroll
        for (int kk = 0; kk < BK / KW; ++kk) {
          const unsigned kb = TB ? kk * 32 : kk * 2048; // the k16 step's offset in a B tile
          const unsigned long long db = kf_wg_desc(sb + kb, TB ? 16 : 8192, 1024);
#pragma unroll
          for (int h = 0; h < HALVES; ++h) {
            const unsigned ah = sa + h * 8192 + (TA ? kk * 2048 : kk * 32);
            // Transpose bits: 1 for an M/N-major operand (A^T stored [K,M]; B stored [K,N]).
            const unsigned long long da = kf_wg_desc(ah, TA ? 8192 : 16, 1024);
            kf_wgmma<BN>::template run<DT, TA, !TB>(acc[h], da, db);
            if constexpr (DU)
              kf_wgmma<BN>::template run<DT, TA, !TB>(acc2[h], da, kf_wg_desc(sb + B_BYTES + kb, TB ? 16 : 8192, 1024));
          }
        }
        kf_wg_commit();
        // PF k steps before the end, while the tensor cores work, the lines the epilogue
        // will read are prefetched: 32 columns apart, lane t4 at 8 columns past that (no
        // line of a 16-bit or 32-bit input missed), both rows g and g + 8 of each half.
        if (kt == PF) {
#pragma unroll
          for (int hf = 0; hf < HALVES; ++hf)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int m = kf_below(row0Of(hf) + g + 8 * h, M);
#pragma unroll
              for (int q = 0; q < BN / 32; ++q)
                epi.prefetch(cbase + (unsigned long long)m * N + kf_below(n0 + q * 32 + t4 * 8, N));
            }
        }
        // Keep this stage's wgmma group in flight; the previous one has finished reading
        // its stage, which goes back to the producer.
        kf_wg_wait<1>();
        if (kt > 0)
          release((it + ST - 1) % ST);
      }
      // Every wgmma of the tile is issued: the other consumer's may queue behind them.
      if (PP && j + 1 < mine)
        asm volatile("bar.arrive %0, 256;\n" ::"r"(2 - c) : "memory");
      kf_wg_wait<0>();
      if (KT > 0) // the tile's last stage
        release((it + ST - 1) % ST);
      // Accumulator layout of m64nN: warp w of the group holds rows 16w..16w+15; per 8
      // columns j, a thread holds (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1).
#pragma unroll
      for (int hf = 0; hf < HALVES; ++hf) {
      const int row0 = row0Of(hf);
      if constexpr (Epi::staged && Epi::rolled && !DU) {
        // A long epilogue (Epi::rolled), one 16-bit output: written out for each of the
        // tile's values, its code outgrew the instruction cache (a 20-op epilogue made a
        // 4096^3 GEMM 3.2x slower on the H200). Each warp stages 32 columns of its raw
        // accumulators at a time in shared memory (rows padded to 36 floats), then runs the
        // epilogue in a loop: a lane takes 8 adjacent columns of a row, so one copy of the
        // epilogue's code serves the tile, and stores them as one 16-byte piece.
        constexpr int LF = 36;
        unsigned short *const out = epi.out();
        float *const fb = reinterpret_cast<float *>(kf_wg_smem + (stage - kf_saddr(kf_wg_smem))) + (c * 4 + w) * 16 * LF;
        const bool vec = N % 8 == 0 && (reinterpret_cast<unsigned long long>(out) & 15) == 0;
#pragma unroll 1
        for (int cc = 0; cc < BN / 32; ++cc) {
          // The accumulators are registers: each chunk's are named at compile time.
#pragma unroll
          for (int c2 = 0; c2 < BN / 32; ++c2)
            if (c2 == cc) {
#pragma unroll
              for (int jj = 0; jj < 4; ++jj)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                  const int x = (c2 * 4 + jj) * 4 + 2 * h;
                  *reinterpret_cast<float2 *>(fb + (g + 8 * h) * LF + jj * 8 + t4 * 2) = make_float2(acc[hf][x], acc[hf][x + 1]);
                }
            }
          __syncwarp();
#pragma unroll 1
          for (int it = 0; it < 2; ++it) {
            const int r = lane / 4 + 8 * it, m = row0 + r, n = n0 + cc * 32 + (lane % 4) * 8;
            const float4 p0 = *reinterpret_cast<const float4 *>(fb + r * LF + (lane % 4) * 8);
            const float4 p1 = *reinterpret_cast<const float4 *>(fb + r * LF + (lane % 4) * 8 + 4);
            const float x[8] = {p0.x, p0.y, p0.z, p0.w, p1.x, p1.y, p1.z, p1.w};
            // Past M or N from the nearest element's inputs, never stored (as below).
            const unsigned long long i = cbase + (unsigned long long)kf_below(m, M) * N;
            uint4 v;
            unsigned *const pk = reinterpret_cast<unsigned *>(&v);
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              const unsigned v0 = epi.value(i + kf_below(n + 2 * q, N), x[2 * q]).r0;
              const unsigned v1 = epi.value(i + kf_below(n + 2 * q + 1, N), x[2 * q + 1]).r0;
              pk[q] = v0 | v1 << 16;
            }
            kf_wg_store8(out + cbase + (unsigned long long)m * N + n, v, vec, m, M, n, N);
          }
          __syncwarp(); // read before the next chunk overwrites it
        }
      } else if constexpr (Epi::staged) {
        // One 16-bit output: each warp stages its 16 rows 64 columns at a time (rows padded
        // to 72 elements, so the fragment's 4-byte writes hit 32 distinct banks) and stores
        // them as 16-byte pieces, 8 lanes per 128-byte row: 16 stores per warp and 64
        // columns instead of 128 scattered 2-byte ones.
        constexpr int LD = 72;
        unsigned short *const out = epi.out();
        unsigned short *const buf =
            reinterpret_cast<unsigned short *>(kf_wg_smem + (stage - kf_saddr(kf_wg_smem))) + (c * 4 + w) * 16 * LD;
        const bool vec = N % 8 == 0 && (reinterpret_cast<unsigned long long>(out) & 15) == 0;
#pragma unroll
        for (int cc = 0; cc < BN / 64; ++cc) {
          // All 32 values first, then the shared-memory writes: the epilogue's global loads
          // (bias, residual) are then all in flight together, none waits behind a store. An
          // element past M or N takes the nearest one's inputs (kf_below) and is never
          // stored: no branch per element, so the compiler can issue every load up front.
          unsigned pk[8][2];
#pragma unroll
          for (int jj = 0; jj < 8; ++jj)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int j = cc * 8 + jj, m = kf_below(row0 + g + 8 * h, M), n = n0 + j * 8 + t4 * 2;
              const unsigned long long i = cbase + (unsigned long long)m * N;
              const int x = j * 4 + 2 * h;
              const unsigned v0 = kf_wg_value<DU>(epi, i + kf_below(n, N), acc[hf], acc2[hf], x).r0;
              const unsigned v1 = kf_wg_value<DU>(epi, i + kf_below(n + 1, N), acc[hf], acc2[hf], x + 1).r0;
              pk[jj][h] = v0 | v1 << 16;
            }
#pragma unroll
          for (int jj = 0; jj < 8; ++jj)
#pragma unroll
            for (int h = 0; h < 2; ++h)
              *reinterpret_cast<unsigned *>(buf + (g + 8 * h) * LD + jj * 8 + t4 * 2) = pk[jj][h];
          __syncwarp();
#pragma unroll
          for (int p = 0; p < 4; ++p) {
            const int r = p * 4 + lane / 8, m = row0 + r, n = n0 + cc * 64 + (lane % 8) * 8;
            const uint4 v = *reinterpret_cast<const uint4 *>(buf + r * LD + (lane % 8) * 8);
            kf_wg_store8(out + cbase + (unsigned long long)m * N + n, v, vec, m, M, n, N);
          }
          __syncwarp(); // read before the next chunk overwrites it
        }
      } else {
        // Any other outputs: 32 columns at a time, the 16 values of a thread first (past M
        // or N from the nearest element's inputs, as above), then their stores, so the
        // epilogue's loads are in flight together (no more: 64 columns spill with two
        // consumer warpgroups).
#pragma unroll
        for (int cc = 0; cc < BN / 32; ++cc) {
          typename Epi::vals v[4][4];
#pragma unroll
          for (int jj = 0; jj < 4; ++jj)
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              const int j = cc * 4 + jj, m = row0 + g + (q >> 1) * 8, n = n0 + j * 8 + t4 * 2 + (q & 1);
              v[jj][q] = kf_wg_value<DU>(epi, cbase + (unsigned long long)kf_below(m, M) * N + kf_below(n, N), acc[hf], acc2[hf], j * 4 + q);
            }
#pragma unroll
          for (int jj = 0; jj < 4; ++jj)
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              const int j = cc * 4 + jj, m = row0 + g + (q >> 1) * 8, n = n0 + j * 8 + t4 * 2 + (q & 1);
              if (m < M && n < N)
                epi.store(cbase + (unsigned long long)m * N + n, v[jj][q]);
            }
        }
      }
      } // halves
    }
  }
}
