// kfuse-provides: kf_el
// kfuse-requires: convert.cuh

// ---- GEMM templates. DT: 0 f32, 1 f16, 2 bf16. Sizes are template constants.
template <int DT> struct kf_el;
template <> struct kf_el<0> {
  typedef float T;
  static __device__ __forceinline__ float f(float x) { return x; }
  static __device__ __forceinline__ float at(const uint4 &v, int j) { return __uint_as_float(j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w); }
};
template <> struct kf_el<1> {
  typedef unsigned short T;
  static __device__ __forceinline__ float f(unsigned short x) { return kf_h2f(x); }
  static __device__ __forceinline__ float at(const uint4 &v, int j) {
    const unsigned w = (j >> 1) == 0 ? v.x : (j >> 1) == 1 ? v.y : (j >> 1) == 2 ? v.z : v.w;
    return kf_h2f((unsigned short)((j & 1) ? (w >> 16) : (w & 0xffffu)));
  }
};
template <> struct kf_el<2> {
  typedef unsigned short T;
  static __device__ __forceinline__ float f(unsigned short x) { return kf_bf2f(x); }
  static __device__ __forceinline__ float at(const uint4 &v, int j) {
    const unsigned w = (j >> 1) == 0 ? v.x : (j >> 1) == 1 ? v.y : (j >> 1) == 2 ? v.z : v.w;
    return __uint_as_float((j & 1) ? (w & 0xffff0000u) : (w << 16));
  }
};
