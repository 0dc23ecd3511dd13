// kfuse-provides: kf_ld16
static __device__ __forceinline__ uint4 kf_ld16(const void *p) { return __ldg(reinterpret_cast<const uint4 *>(p)); }
