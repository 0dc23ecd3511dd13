// kfuse-provides: kf_warp_sum kf_warp_max kf_warp_min
// kfuse-requires: math_minmax.cuh
// Reductions across the W lanes of an aligned group of one warp (W a power of two, at most
// 32) by butterfly shuffles: every lane ends with the same value, combined in a fixed order,
// so a reduction kernel gives the same bits on every run. amax/amin propagate NaN (kf_max).
template <int W> static __device__ __forceinline__ float kf_warp_sum(float v) {
#pragma unroll
  for (int o = W / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
template <int W> static __device__ __forceinline__ float kf_warp_max(float v) {
#pragma unroll
  for (int o = W / 2; o > 0; o >>= 1) v = kf_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
template <int W> static __device__ __forceinline__ float kf_warp_min(float v) {
#pragma unroll
  for (int o = W / 2; o > 0; o >>= 1) v = kf_min(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
