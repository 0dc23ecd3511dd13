// kfuse-provides: kf_cp16 kf_cp_commit kf_cp_wait
// 16-byte async copy; with pred false nothing is read and the 16 bytes are zero-filled.
static __device__ __forceinline__ void kf_cp16(unsigned dst, const void *src, bool pred) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(pred ? 16 : 0));
}
static __device__ __forceinline__ void kf_cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> static __device__ __forceinline__ void kf_cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }
