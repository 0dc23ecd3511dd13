// kfuse-provides: kf_prefetch_l1 kf_prefetch_l2
// Prefetches of the line holding p: into L1 (and L2), or into L2 only. No value comes back,
// so the thread does not wait for them.
static __device__ __forceinline__ void kf_prefetch_l1(const void *p) { asm volatile("prefetch.global.L1 [%0];" ::"l"(p)); }
static __device__ __forceinline__ void kf_prefetch_l2(const void *p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }
