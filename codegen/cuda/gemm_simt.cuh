// kfuse-provides: kf_gemm_simt
// kfuse-requires: gemm_el.cuh

// f32 FFMA tiles (exact f32): BM x BN per 256 threads, 4 x 4 results per thread, BK per step.
template <int DT, int M, int N, int K, bool TA, bool TB, int BM, int BN, int BK, class Epi>
static __device__ __forceinline__ void kf_gemm_simt(const typename kf_el<DT>::T *__restrict__ A,
                                                    const typename kf_el<DT>::T *__restrict__ B, unsigned long long cbase,
                                                    const Epi &epi) {
  __shared__ float sA[BK][BM + 4], sB[BK][BN + 4];
  const int tid = threadIdx.x, ty = tid / (BN / 4), tx = tid % (BN / 4);
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
      acc[i][j] = 0.0f;
  for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int e = tid; e < BM * BK; e += 256) { // consecutive threads along the contiguous dim
      const int m = TA ? e % BM : e / BK, k = TA ? e / BM : e % BK;
      const int gm = m0 + m, gk = k0 + k;
      sA[k][m] = (gm < M && gk < K) ? kf_el<DT>::f(A[TA ? (unsigned long long)gk * M + gm : (unsigned long long)gm * K + gk]) : 0.0f;
    }
#pragma unroll
    for (int e = tid; e < BN * BK; e += 256) {
      const int n = TB ? e / BK : e % BN, k = TB ? e % BK : e / BN;
      const int gn = n0 + n, gk = k0 + k;
      sB[k][n] = (gn < N && gk < K) ? kf_el<DT>::f(B[TB ? (unsigned long long)gn * K + gk : (unsigned long long)gk * N + gn]) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        a[i] = sA[k][ty * 4 + i];
        b[i] = sB[k][tx * 4 + i];
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
          acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int m = m0 + ty * 4 + i, n = n0 + tx * 4 + j;
      if (m < M && n < N)
        epi(cbase + (unsigned long long)m * N + n, acc[i][j]);
    }
}
