// kfuse-provides: kf_wg_fence kf_wg_commit kf_wg_wait kf_wg_desc kf_wgmma kf_below

// ---- Hopper GEMM (sm_90a): TMA + mbarrier pipeline, wgmma, warp-specialised.
static __device__ __forceinline__ void kf_wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
static __device__ __forceinline__ void kf_wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> static __device__ __forceinline__ void kf_wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }
// Shared-memory matrix descriptor: start, leading and stride byte offsets (16-byte units),
// 128-byte swizzle.
static __device__ __forceinline__ unsigned long long kf_wg_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFFu) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |
         ((unsigned long long)(sbo >> 4) << 32) | (1ull << 62);
}
template <int BN> struct kf_wgmma;
// x where x < n, else n - 1: an epilogue element past the edge of C reads its inputs at the
// last row or column (it is computed, never stored), so the computation needs no branch.
static __device__ __forceinline__ int kf_below(int x, int n) { return x < n ? x : n - 1; }
