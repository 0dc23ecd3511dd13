// kfuse-provides: kf_st_async_f32 kf_fence_mbar_init
// A CTA's partial pushed into another CTA's shared memory in its cluster (st.async), counted
// as 4 bytes on the receiver's mbarrier. The receiver waits on its own mbarrier for the
// bytes of every CTA: no cluster barrier and no release fence, which waits for the memory
// system (a CTA's global stores of its previous row) before the barrier can complete.
static __device__ __forceinline__ void kf_st_async_f32(unsigned a, float v, unsigned bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [%0], %1, [%2];\n" ::"r"(a), "f"(v), "r"(bar)
               : "memory");
#else
  __trap();
#endif
}
// This CTA's mbarrier inits visible to the cluster, before the barrier that precedes the
// first partial another CTA pushes.
static __device__ __forceinline__ void kf_fence_mbar_init() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#else
  __trap();
#endif
}
