// kfuse-provides: kf_tile_load
// kfuse-requires: smem_addr.cuh cp_async.cuh

// One cp.async tile (R x C of a row-major R_ALL x C_ALL operand of T at (r0, c0)) into
// shared memory with rows padded to LD, with a compile-time trip count (fully unrolled: a
// stage's copies issue back to back). 16-byte chunks of V = 16 / sizeof(T) elements: cp.async
// when C_ALL % V == 0 (every row start aligned), else V predicated scalar loads per chunk.
// Out of range reads as 0.
template <class T, int R, int C, int LD, int R_ALL, int C_ALL, int THREADS>
static __device__ __forceinline__ void kf_tile_load(T *dst, const T *__restrict__ src, int r0, int c0) {
  constexpr int V = 16 / sizeof(T), CH = R * C / V, IT = (CH + THREADS - 1) / THREADS;
#pragma unroll
  for (int it = 0; it < IT; ++it) {
    const int c = it * THREADS + (int)threadIdx.x;
    if (CH % THREADS != 0 && c >= CH)
      break;
    const int r = c / (C / V), cv = (c % (C / V)) * V;
    const int gr = r0 + r, gc = c0 + cv;
    T *d = dst + r * LD + cv;
    const T *s = src + (unsigned long long)gr * C_ALL + gc;
    if (C_ALL % V == 0) {
      const bool ok = gr < R_ALL && gc < C_ALL;
      kf_cp16(kf_saddr(d), ok ? s : src, ok);
    } else {
      T v[V];
#pragma unroll
      for (int j = 0; j < V; ++j)
        v[j] = (gr < R_ALL && gc + j < C_ALL) ? s[j] : (T)0;
      *reinterpret_cast<uint4 *>(d) = *reinterpret_cast<const uint4 *>(v);
    }
  }
}
