// kfuse-provides: kf_max kf_min
// kfuse-requires: math_nan.cuh
// IEEE 754-2019 maximum/minimum, as the interpreter: NaN propagates and -0 < +0.
static __device__ __forceinline__ float kf_max(float a, float b) { return (a != a || b != b) ? kf_nan() : a == b ? (signbit(a) ? b : a) : fmaxf(a, b); }
static __device__ __forceinline__ float kf_min(float a, float b) { return (a != a || b != b) ? kf_nan() : a == b ? (signbit(a) ? a : b) : fminf(a, b); }
