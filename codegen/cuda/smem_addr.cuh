// kfuse-provides: kf_saddr
static __device__ __forceinline__ unsigned kf_saddr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
