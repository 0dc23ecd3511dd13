// kfuse-provides: kf_bulk_load
// `bytes` (a multiple of 16) from global memory at `src` into this CTA's shared memory at
// `dst` (kf_saddr; both 16-byte aligned) by the bulk copy engine (sm_90), completing on the
// mbarrier at `bar` as that many transaction bytes. The issuing thread does not wait: the
// readers wait on the mbarrier.
static __device__ __forceinline__ void kf_bulk_load(unsigned dst, const void *src, unsigned bytes, unsigned bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
               ::"r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
#else
  __trap();
#endif
}
