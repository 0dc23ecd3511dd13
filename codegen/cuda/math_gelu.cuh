// kfuse-provides: kf_gelu
// 0.5 x (1 + erf(x / sqrt 2)) written with erfc: for x < -3, 1 + erf cancels to a few
// correct bits in f32 (gelu(-5) was 4% off, found by the GPU reduction differential).
static __device__ __forceinline__ float kf_gelu(float x) { return 0.5f * x * erfcf(x * -0.70710678118654752f); }
