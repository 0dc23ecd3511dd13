// kfuse-provides: kf_gemm_tc
// kfuse-requires: gemm_el.cuh smem_addr.cuh cp_async.cuh ldmatrix.cuh mma_sync.cuh tile_load.cuh mma_tf32.cuh

// Tensor cores: BM x BN tile per block of WM x WN warps, BK per stage, ST stages of cp.async,
// then the epilogue per element straight from the f32 accumulators (C fragments as
// m16n8k16's). f16/bf16: rows padded by 8 elements, ldmatrix (.trans for the operand whose
// contiguous dim is not K), mma.sync m16n8k16. f32 read as TF32 (DT 0): K-contiguous rows
// padded by 4 elements, M/N-contiguous ones by 8 (a fragment's 32 scalar reads hit 32
// banks), mma.sync m16n8k8 on fragments (g = lane / 4, t = lane % 4) A a0 (g, t), a1
// (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4); B b0 (k t, n g), b1 (k t + 4, n g).
template <int DT, int M, int N, int K, bool TA, bool TB, int BM, int BN, int BK, int ST, int WM, int WN, class Epi>
static __device__ __forceinline__ void kf_gemm_tc(const typename kf_el<DT>::T *__restrict__ A,
                                                  const typename kf_el<DT>::T *__restrict__ B,
                                                  unsigned long long cbase, const Epi &epi) {
  typedef typename kf_el<DT>::T T;
  constexpr int THREADS = 32 * WM * WN, WTM = BM / WM, WTN = BN / WN, MI = WTM / 16, NI = WTN / 8;
  constexpr int A_R = TA ? BK : BM, A_C = TA ? BM : BK, A_LD = A_C + (DT == 0 && !TA ? 4 : 8);
  constexpr int B_R = TB ? BN : BK, B_C = TB ? BK : BN, B_LD = B_C + (DT == 0 && TB ? 4 : 8);
  constexpr int A_ST = A_R * A_LD, B_ST = B_R * B_LD, KT = (K + BK - 1) / BK;
  extern __shared__ __align__(16) unsigned short kf_smem[];
  T *sA = reinterpret_cast<T *>(kf_smem), *sB = sA + ST * A_ST;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, wm = warp / WN, wn = warp % WN;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  auto load = [&](int s, int kt) {
    const int k0 = kt * BK;
    kf_tile_load<T, A_R, A_C, A_LD, TA ? K : M, TA ? M : K, THREADS>(sA + s * A_ST, A, TA ? k0 : m0, TA ? m0 : k0);
    kf_tile_load<T, B_R, B_C, B_LD, TB ? N : K, TB ? K : N, THREADS>(sB + s * B_ST, B, TB ? n0 : k0, TB ? k0 : n0);
  };
  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q)
        acc[i][j][q] = 0.0f;
#pragma unroll
  for (int s = 0; s < ST - 1; ++s) {
    if (s < KT)
      load(s, s);
    kf_cp_commit();
  }
  const int mat = lane / 8, r8 = lane % 8;
  for (int kt = 0; kt < KT; ++kt) {
    kf_cp_wait<ST - 2>();
    __syncthreads(); // tile kt landed for all; every warp is done with tile kt-1's stage
    if (kt + ST - 1 < KT)
      load((kt + ST - 1) % ST, kt + ST - 1);
    kf_cp_commit();
    const T *a = sA + (kt % ST) * A_ST, *b = sB + (kt % ST) * B_ST;
    if constexpr (DT == 0) {
      const int g = lane / 4, t4 = lane % 4;
      // Element (row m, k) of the stage's A, (k, column n) of its B.
      auto at = [a](int m, int k) { return a[TA ? k * A_LD + m : m * A_LD + k]; };
      auto bt = [b](int k, int n) { return b[TB ? n * B_LD + k : k * B_LD + n]; };
#pragma unroll
      for (int kk = 0; kk < BK; kk += 8) {
        unsigned af[MI][4], bf[NI][2];
#pragma unroll
        for (int i = 0; i < MI; ++i) {
          const int mr = wm * WTM + i * 16 + g;
          af[i][0] = kf_tf32(at(mr, kk + t4));
          af[i][1] = kf_tf32(at(mr + 8, kk + t4));
          af[i][2] = kf_tf32(at(mr, kk + t4 + 4));
          af[i][3] = kf_tf32(at(mr + 8, kk + t4 + 4));
        }
#pragma unroll
        for (int j = 0; j < NI; ++j) {
          const int nc = wn * WTN + j * 8 + g;
          bf[j][0] = kf_tf32(bt(kk + t4, nc));
          bf[j][1] = kf_tf32(bt(kk + t4 + 4, nc));
        }
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
          for (int j = 0; j < NI; ++j)
            kf_mma_tf32(acc[i][j], af[i], bf[j]);
      }
    } else {
#pragma unroll
      for (int kk = 0; kk < BK; kk += 16) {
        unsigned af[MI][4], bf[NI][2];
#pragma unroll
        for (int i = 0; i < MI; ++i) {
          const int mr = wm * WTM + i * 16;
          if (TA)
            kf_ldm4t(af[i], kf_saddr(a + (kk + (mat >> 1) * 8 + r8) * A_LD + mr + (mat & 1) * 8));
          else
            kf_ldm4(af[i], kf_saddr(a + (mr + (mat & 1) * 8 + r8) * A_LD + kk + (mat >> 1) * 8));
        }
#pragma unroll
        for (int j = 0; j < NI; j += 2) {
          const int nc = wn * WTN + j * 8;
          unsigned r[4];
          if (TB)
            kf_ldm4(r, kf_saddr(b + (nc + (mat >> 1) * 8 + r8) * B_LD + kk + (mat & 1) * 8));
          else
            kf_ldm4t(r, kf_saddr(b + (kk + (mat & 1) * 8 + r8) * B_LD + nc + (mat >> 1) * 8));
          bf[j][0] = r[0];
          bf[j][1] = r[1];
          bf[j + 1][0] = r[2];
          bf[j + 1][1] = r[3];
        }
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
          for (int j = 0; j < NI; ++j)
            kf_mma<DT>(acc[i][j], af[i], bf[j]);
      }
    }
  }
  const int g = lane / 4, t4 = lane % 4;
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int m = m0 + wm * WTM + i * 16 + g + (q >> 1) * 8, n = n0 + wn * WTN + j * 8 + t4 * 2 + (q & 1);
        if (m < M && n < N)
          epi(cbase + (unsigned long long)m * N + n, acc[i][j][q]);
      }
}
