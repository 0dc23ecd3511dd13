// kfuse-provides: kf_sigmoid
// 1 / (1 + e^-x) with the fast exp and division (see kf_silu): a few ulp in f32.
static __device__ __forceinline__ float kf_sigmoid(float x) { return __fdividef(1.0f, 1.0f + __expf(-x)); }
