// kfuse-provides: kf_nan
static __device__ __forceinline__ float kf_nan() { return __int_as_float(0x7fc00000); }
