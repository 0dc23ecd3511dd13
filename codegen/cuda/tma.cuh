// The device helpers of the bulk tensor copy engine (TMA, sm_90): the tensor map passed by
// value, mbarrier init / expect-bytes / arrive / wait (in this CTA or across its cluster),
// thread-block cluster rank / barrier / addresses, and a 3D box copy into shared memory
// (one CTA's, or multicast to several of a cluster) that completes on an mbarrier. Shared
// by the Hopper GEMM and the decode kernel; emitted once, before either.
// kfuse-provides: kf_tmap kf_mbar_init kf_mbar_expect kf_mbar_arrive kf_mbar_wait kf_cluster_rank
// kfuse-provides: kf_cluster_sync kf_cluster_sync_relaxed kf_cluster_addr kf_mbar_arrive_cluster
// kfuse-provides: kf_tma3 kf_tma3_mc kf_ld_cluster_f32

// ---- TMA (sm_90): tensor maps, mbarriers, clusters, bulk tensor copies into shared memory.
struct __align__(64) kf_tmap { unsigned long long v[16]; }; // a CUtensorMap, by value
static __device__ __forceinline__ void kf_mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
static __device__ __forceinline__ void kf_mbar_expect(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
static __device__ __forceinline__ void kf_mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Returns once the phase of parity `parity` has completed.
static __device__ __forceinline__ void kf_mbar_wait(unsigned bar, unsigned parity) {
  asm volatile("{\n.reg .pred p;\nKF_WAIT:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
               "@!p bra KF_WAIT;\n}\n" ::"r"(bar), "r"(parity) : "memory");
}
// Thread-block clusters (sm_90; the rest trap, never reached: only sm_90 kernels cluster).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define KF_CLUSTER 1
#endif
static __device__ __forceinline__ unsigned kf_cluster_rank() {
#ifdef KF_CLUSTER
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
#else
  return 0;
#endif
}
// All threads of all CTAs of the cluster: shared-memory writes before it are visible to
// distributed shared-memory reads after it, in any CTA of the cluster.
static __device__ __forceinline__ void kf_cluster_sync() {
#ifdef KF_CLUSTER
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#else
  __trap();
#endif
}
// A float at a shared::cluster address (kf_cluster_addr): distributed shared memory.
static __device__ __forceinline__ float kf_ld_cluster_f32(unsigned a) {
#ifdef KF_CLUSTER
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(a) : "memory");
  return v;
#else
  __trap();
  return 0.0f;
#endif
}
// The same barrier without memory ordering (the arrive is relaxed).
static __device__ __forceinline__ void kf_cluster_sync_relaxed() {
#ifdef KF_CLUSTER
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.aligned;\n" ::: "memory");
#else
  __trap();
#endif
}
// The shared::cluster address, in CTA `rank` of the cluster, of this CTA's shared-memory
// address `a` (kf_saddr).
static __device__ __forceinline__ unsigned kf_cluster_addr(unsigned a, unsigned rank) {
#ifdef KF_CLUSTER
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(a), "r"(rank));
  return r;
#else
  __trap();
  return 0;
#endif
}
// Arrives on the mbarrier at shared::cluster address `a` (this CTA's or another's of the
// cluster). The default .release.cta semantics: a release at cluster scope made every k
// step of the clustered GEMM wait for the memory system (1.8-3x slower on the H200), and
// what it orders, wgmma's reads of a stage before the copies that refill it, is complete
// once wgmma.wait_group returns.
static __device__ __forceinline__ void kf_mbar_arrive_cluster(unsigned a) {
#ifdef KF_CLUSTER
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(a) : "memory");
#else
  __trap();
#endif
}
// A box of the tensor map at element coordinates (c0 contiguous, c1 rows, c2 matrix),
// completing on mbarrier `bar`.
static __device__ __forceinline__ void kf_tma3(unsigned dst, const kf_tmap *map, int c0, int c1, int c2, unsigned bar) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n"
               ::"r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar) : "memory");
}
// The same box into the same shared-memory offset of every CTA of the cluster in `mask`,
// completing on the mbarrier at offset `bar` of each (sm_90a).
static __device__ __forceinline__ void kf_tma3_mc(unsigned dst, const kf_tmap *map, int c0, int c1, int c2, unsigned bar, unsigned short mask) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3, %4}], [%5], %6;\n"
               ::"r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "h"(mask) : "memory");
}
