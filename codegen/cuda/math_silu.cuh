// kfuse-provides: kf_silu
static __device__ __forceinline__ float kf_silu(float x) { return x / (1.0f + expf(-x)); }
