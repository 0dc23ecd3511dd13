// kfuse-provides: kf_sigmoid
static __device__ __forceinline__ float kf_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
