// kfuse-provides: kf_silu
// x * sigmoid(x) as x / (1 + e^-x) with the fast exp and division (__expf, __fdividef): a few
// ulp in f32, and no IEEE-division slow path inlined per element of a GEMM epilogue (which
// tripled ptxas's time on a 128x256 tile). x < -88: e^-x is inf, the result -0 (silu -> 0).
static __device__ __forceinline__ float kf_silu(float x) { return __fdividef(x, 1.0f + __expf(-x)); }
