// kfuse-provides: kf_relu
static __device__ __forceinline__ float kf_relu(float x) { return x != x ? x : fmaxf(x, 0.0f); }
