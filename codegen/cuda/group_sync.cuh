// kfuse-provides: kf_group_sync kf_ld_partial
// A barrier among the n CTAs of a grid that work on one row together (a split reduction,
// codegen/ReduceSpec.h), through a 64-bit counter in global memory that only grows: each CTA
// adds 1 and waits until the counter reaches the next multiple of n. Every barrier adds
// exactly n, so the counter is a multiple of n before each one and needs no reset between
// barriers or launches (zeroed once, when the workspace is allocated). The CTAs wait on each
// other, so they must all be resident: the runtime launches such a kernel cooperatively.
// Writes before the barrier (the CTA's partials) are visible after it: a release fence
// before the arrival, an acquire load of the counter and a fence after.
static __device__ __forceinline__ void kf_group_sync(unsigned long long *counter, unsigned n) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    const unsigned long long old = atomicAdd(counter, 1ull);
    const unsigned long long target = old - old % n + n;
    unsigned long long seen;
    do {
      asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(seen) : "l"(counter) : "memory");
    } while (seen < target);
    __threadfence();
  }
  __syncthreads();
}
// Another CTA's partial, read from L2 (not through this SM's L1, which is not coherent).
static __device__ __forceinline__ float kf_ld_partial(const float *p) { return __ldcg(p); }
