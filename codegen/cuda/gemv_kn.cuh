// kfuse-provides: kf_gemv_kn
// kfuse-requires: gemm_el.cuh load16.cuh

// Small M, B stored [K][N]: each thread owns 8 (16 bytes of) contiguous columns and every
// KR-th row of K, U loads in flight; the KR partial sums meet in shared memory.
template <int DT, int M, int N, int K, bool TA, int BN, int THREADS, class Epi>
static __device__ __forceinline__ void kf_gemv_kn(const typename kf_el<DT>::T *__restrict__ A,
                                                  const typename kf_el<DT>::T *__restrict__ B, unsigned long long cbase,
                                                  const Epi &epi) {
  typedef typename kf_el<DT>::T T;
  constexpr int VE = 16 / sizeof(T), CT = BN / VE, KR = THREADS / CT, U = M <= 4 ? 8 : 4;
  __shared__ float red[KR][BN + 1];
  const int tid = threadIdx.x, ct = tid % CT, kr = tid / CT;
  const int n0 = blockIdx.x * BN + ct * VE;
  float acc[M][VE];
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int j = 0; j < VE; ++j)
      acc[m][j] = 0.0f;
  for (int kb = 0; kb < K; kb += U * KR) {
    float w[U][VE];
    if (N % VE == 0) {
      uint4 v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int k = kb + u * KR + kr;
        v[u] = (k < K && n0 < N) ? kf_ld16(B + (unsigned long long)k * N + n0) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int j = 0; j < VE; ++j)
          w[u][j] = kf_el<DT>::at(v[u], j);
    } else {
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int k = kb + u * KR + kr;
#pragma unroll
        for (int j = 0; j < VE; ++j)
          w[u][j] = (k < K && n0 + j < N) ? kf_el<DT>::f(B[(unsigned long long)k * N + n0 + j]) : 0.0f;
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int k = kb + u * KR + kr;
      if (k < K) {
#pragma unroll
        for (int m = 0; m < M; ++m) {
          const float x = kf_el<DT>::f(A[TA ? (unsigned long long)k * M + m : (unsigned long long)m * K + k]);
#pragma unroll
          for (int j = 0; j < VE; ++j)
            acc[m][j] = fmaf(x, w[u][j], acc[m][j]);
        }
      }
    }
  }
#pragma unroll
  for (int m = 0; m < M; ++m) {
#pragma unroll
    for (int j = 0; j < VE; ++j)
      red[kr][ct * VE + j] = acc[m][j];
    __syncthreads();
    for (int col = tid; col < BN; col += THREADS) {
      float s = 0.0f;
      for (int r = 0; r < KR; ++r)
        s += red[r][col];
      const int n = blockIdx.x * BN + col;
      if (n < N)
        epi(cbase + (unsigned long long)m * N + n, s);
    }
    __syncthreads();
  }
}
