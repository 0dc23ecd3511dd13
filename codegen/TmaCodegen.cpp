#include "codegen/TmaCodegen.h"

namespace kfuse::codegen {

static const char *kTma = R"(
// ---- TMA (sm_90): tensor maps, mbarriers, bulk tensor copies into shared memory.
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
// A box of the tensor map at element coordinates (c0 contiguous, c1 rows, c2 matrix),
// completing on mbarrier `bar`.
static __device__ __forceinline__ void kf_tma3(unsigned dst, const kf_tmap *map, int c0, int c1, int c2, unsigned bar) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n"
               ::"r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar) : "memory");
}
)";

const char *tmaPrelude() { return kTma; }

} // namespace kfuse::codegen
