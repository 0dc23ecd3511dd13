// kfuse-provides: kf_warp_sum kf_warp_max kf_warp_min kf_online_add kf_warp_online kf_welford_add kf_warp_welford
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
// Online softmax sums: a part of a row is (m, s), its max and the sum of exp(x - m) over it.
// Two parts combine by rescaling each sum to the larger max; a part whose max is -inf has
// s = 0 and adds nothing, and a NaN max propagates. Symmetric in its two parts, so butterfly
// lanes agree bit for bit.
static __device__ __forceinline__ void kf_online_add(float &m, float &s, float mo, float so) {
  const float mn = kf_max(m, mo);
  s = (m == mn ? s : s * expf(m - mn)) + (mo == mn ? so : so * expf(mo - mn));
  m = mn;
}
template <int W> static __device__ __forceinline__ void kf_warp_online(float &m, float &s) {
#pragma unroll
  for (int o = W / 2; o > 0; o >>= 1) {
    const float mo = __shfl_xor_sync(0xffffffffu, m, o), so = __shfl_xor_sync(0xffffffffu, s, o);
    kf_online_add(m, s, mo, so);
  }
}
// Variance about the mean, by parts (Chan et al.): a part is (n, s, q), its element count,
// sum and sum of squares about its own mean s / n. Two parts combine exactly as the two-pass
// sums would, up to rounding; a part of no elements adds nothing. Symmetric in its parts.
static __device__ __forceinline__ void kf_welford_add(float &n, float &s, float &q, float no, float so,
                                                      float qo) {
  if (no == 0.0f)
    return;
  if (n == 0.0f) {
    n = no, s = so, q = qo;
    return;
  }
  const float nn = n + no, d = so / no - s / n;
  q = q + qo + d * d * (n * no / nn);
  s = s + so;
  n = nn;
}
template <int W> static __device__ __forceinline__ void kf_warp_welford(float &n, float &s, float &q) {
#pragma unroll
  for (int o = W / 2; o > 0; o >>= 1) {
    const float no = __shfl_xor_sync(0xffffffffu, n, o), so = __shfl_xor_sync(0xffffffffu, s, o),
                qo = __shfl_xor_sync(0xffffffffu, q, o);
    kf_welford_add(n, s, q, no, so, qo);
  }
}
