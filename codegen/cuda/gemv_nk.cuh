// kfuse-provides: kf_gemv_nk
// kfuse-requires: gemm_el.cuh load16.cuh

// Small M, B stored [N][K] (trans_b): a warp per CPW columns, lanes stream K with 16-byte
// loads (CPW independent loads each), a warp-shuffle reduction, then the epilogue.
template <int DT, int M, int N, int K, bool TA, int CPW, int WARPS, class Epi>
static __device__ __forceinline__ void kf_gemv_nk(const typename kf_el<DT>::T *__restrict__ A,
                                                  const typename kf_el<DT>::T *__restrict__ B, unsigned long long cbase,
                                                  const Epi &epi) {
  typedef typename kf_el<DT>::T T;
  constexpr int VE = 16 / sizeof(T);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int nb = (blockIdx.x * WARPS + warp) * CPW;
  float acc[M][CPW];
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int c = 0; c < CPW; ++c)
      acc[m][c] = 0.0f;
  if (K % VE == 0) {
#pragma unroll 2
    for (int kv = lane; kv < K / VE; kv += 32) {
      uint4 w[CPW];
#pragma unroll
      for (int c = 0; c < CPW; ++c)
        w[c] = nb + c < N ? kf_ld16(B + (unsigned long long)(nb + c) * K + kv * VE) : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int m = 0; m < M; ++m) {
        float x[VE];
        if (!TA) {
          const uint4 xv = kf_ld16(A + (unsigned long long)m * K + kv * VE);
#pragma unroll
          for (int j = 0; j < VE; ++j)
            x[j] = kf_el<DT>::at(xv, j);
        } else {
#pragma unroll
          for (int j = 0; j < VE; ++j)
            x[j] = kf_el<DT>::f(A[(unsigned long long)(kv * VE + j) * M + m]);
        }
#pragma unroll
        for (int c = 0; c < CPW; ++c)
#pragma unroll
          for (int j = 0; j < VE; ++j)
            acc[m][c] = fmaf(x[j], kf_el<DT>::at(w[c], j), acc[m][c]);
      }
    }
  } else {
    for (int k = lane; k < K; k += 32) {
      float w[CPW];
#pragma unroll
      for (int c = 0; c < CPW; ++c)
        w[c] = nb + c < N ? kf_el<DT>::f(B[(unsigned long long)(nb + c) * K + k]) : 0.0f;
#pragma unroll
      for (int m = 0; m < M; ++m) {
        const float x = kf_el<DT>::f(A[TA ? (unsigned long long)k * M + m : (unsigned long long)m * K + k]);
#pragma unroll
        for (int c = 0; c < CPW; ++c)
          acc[m][c] = fmaf(x, w[c], acc[m][c]);
      }
    }
  }
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int c = 0; c < CPW; ++c) {
#pragma unroll
      for (int o = 16; o > 0; o >>= 1)
        acc[m][c] += __shfl_xor_sync(0xffffffffu, acc[m][c], o);
      if (lane == ((m * CPW + c) & 31) && nb + c < N)
        epi(cbase + (unsigned long long)m * N + nb + c, acc[m][c]);
    }
}
