// kfuse-provides: kf_gelu_tanh
// 0.5 x (1 + tanh(u)) == x * sigmoid(2u): no cancellation, and exp is far cheaper than tanhf.
// Below u = -19.06, 1 + tanh(u) is 0 in float64 (the interpreter's exact zero); keep it.
static __device__ __forceinline__ float kf_gelu_tanh(float x) { const float u = 0.79788456080286536f * (x + 0.044715f * x * x * x), r = __fdividef(x, 1.0f + __expf(-2.0f * u)); return u < -19.06f ? x * 0.0f : r; }
