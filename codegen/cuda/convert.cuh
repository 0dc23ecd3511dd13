// kfuse-provides: kf_h2f kf_bf2f kf_f2h kf_f2bf
static __device__ __forceinline__ float kf_h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
static __device__ __forceinline__ float kf_bf2f(unsigned short h) { return __uint_as_float(((unsigned)h) << 16); }
static __device__ __forceinline__ unsigned short kf_f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
static __device__ __forceinline__ unsigned short kf_f2bf(float f) { unsigned short h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
