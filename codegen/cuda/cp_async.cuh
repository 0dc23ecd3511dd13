// kfuse-provides: kf_cp16 kf_cp_async kf_cp_commit kf_cp_wait kf_cp_wait_all
// 16-byte async copy; with pred false nothing is read and the 16 bytes are zero-filled.
static __device__ __forceinline__ void kf_cp16(unsigned dst, const void *src, bool pred) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(pred ? 16 : 0));
}
// An async copy of B = 4, 8 or 16 bytes (16: around L1, as kf_cp16).
template <int B> static __device__ __forceinline__ void kf_cp_async(unsigned dst, const void *src) {
  if constexpr (B == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(dst), "l"(src), "n"(B));
}
static __device__ __forceinline__ void kf_cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> static __device__ __forceinline__ void kf_cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }
// Every copy of this thread complete and visible to it; a compiler barrier too, so that no
// read of the copied shared memory moves above it.
static __device__ __forceinline__ void kf_cp_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }
