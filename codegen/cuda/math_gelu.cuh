// kfuse-provides: kf_gelu
static __device__ __forceinline__ float kf_gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
