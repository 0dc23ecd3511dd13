#include "codegen/GemmCodegen.h"

#include "codegen/CudaCodegen.h"
#include "codegen/DecodeGemm.h"
#include "codegen/Emitter.h"
#include "ir/Error.h"

namespace kfuse::codegen {

static const char *kGemmPrelude = R"(
// ---- GEMM templates. DT: 0 f32, 1 f16, 2 bf16. Sizes are template constants.
template <int DT> struct kf_el;
template <> struct kf_el<0> {
  typedef float T;
  static __device__ __forceinline__ float f(float x) { return x; }
  static __device__ __forceinline__ float at(const uint4 &v, int j) { return __uint_as_float(j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w); }
};
template <> struct kf_el<1> {
  typedef unsigned short T;
  static __device__ __forceinline__ float f(unsigned short x) { return kf_h2f(x); }
  static __device__ __forceinline__ float at(const uint4 &v, int j) {
    const unsigned w = (j >> 1) == 0 ? v.x : (j >> 1) == 1 ? v.y : (j >> 1) == 2 ? v.z : v.w;
    return kf_h2f((unsigned short)((j & 1) ? (w >> 16) : (w & 0xffffu)));
  }
};
template <> struct kf_el<2> {
  typedef unsigned short T;
  static __device__ __forceinline__ float f(unsigned short x) { return kf_bf2f(x); }
  static __device__ __forceinline__ float at(const uint4 &v, int j) {
    const unsigned w = (j >> 1) == 0 ? v.x : (j >> 1) == 1 ? v.y : (j >> 1) == 2 ? v.z : v.w;
    return __uint_as_float((j & 1) ? (w & 0xffff0000u) : (w << 16));
  }
};
static __device__ __forceinline__ uint4 kf_ld16(const void *p) { return __ldg(reinterpret_cast<const uint4 *>(p)); }
static __device__ __forceinline__ unsigned kf_saddr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
// 16-byte async copy; with pred false nothing is read and the 16 bytes are zero-filled.
static __device__ __forceinline__ void kf_cp16(unsigned dst, const void *src, bool pred) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(pred ? 16 : 0));
}
static __device__ __forceinline__ void kf_cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> static __device__ __forceinline__ void kf_cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }
static __device__ __forceinline__ void kf_ldm4(unsigned *r, unsigned a) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n" : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
static __device__ __forceinline__ void kf_ldm4t(unsigned *r, unsigned a) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n" : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
template <int DT> static __device__ __forceinline__ void kf_mma(float *c, const unsigned *a, const unsigned *b) {
  if (DT == 2)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

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

// f32 inputs on tensor cores where the user allowed TF32 (DT 0 below): each element rounded
// to TF32 (cvt.rna: nearest, ties away; 10-bit mantissa) as its fragment is read.
static __device__ __forceinline__ unsigned kf_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}
static __device__ __forceinline__ void kf_mma_tf32(float *c, const unsigned *a, const unsigned *b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Tensor cores: BM x BN tile per block of WM x WN warps, BK per stage, ST stages of cp.async,
// then the epilogue per element straight from the f32 accumulators (C fragments as
// m16n8k16's). f16/bf16: rows padded by 8 elements, ldmatrix (.trans for the operand whose
// contiguous dim is not K), mma.sync m16n8k16. f32 read as TF32 (DT 0): K-contiguous rows
// padded by 4 elements, M/N-contiguous ones by 8 (a fragment's 32 scalar reads hit 32
// banks), mma.sync m16n8k8 on fragments (g = lane / 4, t = lane % 4) A a0 (g, t), a1
// (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4); B b0 (k t, n g), b1 (k t + 4, n g).
template <int DT, int M, int N, int K, bool TA, bool TB, int BM, int BN, int BK, int ST, int WM, int WN, class Epi>
static __device__ __forceinline__ void kf_gemm_tc(const typename kf_el<DT>::T *__restrict__ A,
                                                  const typename kf_el<DT>::T *__restrict__ B,
                                                  unsigned long long cbase, const Epi &epi) {
  typedef typename kf_el<DT>::T T;
  constexpr int THREADS = 32 * WM * WN, WTM = BM / WM, WTN = BN / WN, MI = WTM / 16, NI = WTN / 8;
  constexpr int A_R = TA ? BK : BM, A_C = TA ? BM : BK, A_LD = A_C + (DT == 0 && !TA ? 4 : 8);
  constexpr int B_R = TB ? BN : BK, B_C = TB ? BK : BN, B_LD = B_C + (DT == 0 && TB ? 4 : 8);
  constexpr int A_ST = A_R * A_LD, B_ST = B_R * B_LD, KT = (K + BK - 1) / BK;
  extern __shared__ __align__(16) unsigned short kf_smem[];
  T *sA = reinterpret_cast<T *>(kf_smem), *sB = sA + ST * A_ST;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, wm = warp / WN, wn = warp % WN;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  auto load = [&](int s, int kt) {
    const int k0 = kt * BK;
    kf_tile_load<T, A_R, A_C, A_LD, TA ? K : M, TA ? M : K, THREADS>(sA + s * A_ST, A, TA ? k0 : m0, TA ? m0 : k0);
    kf_tile_load<T, B_R, B_C, B_LD, TB ? N : K, TB ? K : N, THREADS>(sB + s * B_ST, B, TB ? n0 : k0, TB ? k0 : n0);
  };
  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q)
        acc[i][j][q] = 0.0f;
#pragma unroll
  for (int s = 0; s < ST - 1; ++s) {
    if (s < KT)
      load(s, s);
    kf_cp_commit();
  }
  const int mat = lane / 8, r8 = lane % 8;
  for (int kt = 0; kt < KT; ++kt) {
    kf_cp_wait<ST - 2>();
    __syncthreads(); // tile kt landed for all; every warp is done with tile kt-1's stage
    if (kt + ST - 1 < KT)
      load((kt + ST - 1) % ST, kt + ST - 1);
    kf_cp_commit();
    const T *a = sA + (kt % ST) * A_ST, *b = sB + (kt % ST) * B_ST;
    if constexpr (DT == 0) {
      const int g = lane / 4, t4 = lane % 4;
      // Element (row m, k) of the stage's A, (k, column n) of its B.
      auto at = [a](int m, int k) { return a[TA ? k * A_LD + m : m * A_LD + k]; };
      auto bt = [b](int k, int n) { return b[TB ? n * B_LD + k : k * B_LD + n]; };
#pragma unroll
      for (int kk = 0; kk < BK; kk += 8) {
        unsigned af[MI][4], bf[NI][2];
#pragma unroll
        for (int i = 0; i < MI; ++i) {
          const int mr = wm * WTM + i * 16 + g;
          af[i][0] = kf_tf32(at(mr, kk + t4));
          af[i][1] = kf_tf32(at(mr + 8, kk + t4));
          af[i][2] = kf_tf32(at(mr, kk + t4 + 4));
          af[i][3] = kf_tf32(at(mr + 8, kk + t4 + 4));
        }
#pragma unroll
        for (int j = 0; j < NI; ++j) {
          const int nc = wn * WTN + j * 8 + g;
          bf[j][0] = kf_tf32(bt(kk + t4, nc));
          bf[j][1] = kf_tf32(bt(kk + t4 + 4, nc));
        }
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
          for (int j = 0; j < NI; ++j)
            kf_mma_tf32(acc[i][j], af[i], bf[j]);
      }
    } else {
#pragma unroll
      for (int kk = 0; kk < BK; kk += 16) {
        unsigned af[MI][4], bf[NI][2];
#pragma unroll
        for (int i = 0; i < MI; ++i) {
          const int mr = wm * WTM + i * 16;
          if (TA)
            kf_ldm4t(af[i], kf_saddr(a + (kk + (mat >> 1) * 8 + r8) * A_LD + mr + (mat & 1) * 8));
          else
            kf_ldm4(af[i], kf_saddr(a + (mr + (mat & 1) * 8 + r8) * A_LD + kk + (mat >> 1) * 8));
        }
#pragma unroll
        for (int j = 0; j < NI; j += 2) {
          const int nc = wn * WTN + j * 8;
          unsigned r[4];
          if (TB)
            kf_ldm4(r, kf_saddr(b + (nc + (mat >> 1) * 8 + r8) * B_LD + kk + (mat & 1) * 8));
          else
            kf_ldm4t(r, kf_saddr(b + (kk + (mat & 1) * 8 + r8) * B_LD + nc + (mat >> 1) * 8));
          bf[j][0] = r[0];
          bf[j][1] = r[1];
          bf[j + 1][0] = r[2];
          bf[j + 1][1] = r[3];
        }
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
          for (int j = 0; j < NI; ++j)
            kf_mma<DT>(acc[i][j], af[i], bf[j]);
      }
    }
  }
  const int g = lane / 4, t4 = lane % 4;
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int m = m0 + wm * WTM + i * 16 + g + (q >> 1) * 8, n = n0 + wn * WTN + j * 8 + t4 * 2 + (q & 1);
        if (m < M && n < N)
          epi(cbase + (unsigned long long)m * N + n, acc[i][j][q]);
      }
}

// f32 FFMA tiles (exact f32): BM x BN per 256 threads, 4 x 4 results per thread, BK per step.
template <int DT, int M, int N, int K, bool TA, bool TB, int BM, int BN, int BK, class Epi>
static __device__ __forceinline__ void kf_gemm_simt(const typename kf_el<DT>::T *__restrict__ A,
                                                    const typename kf_el<DT>::T *__restrict__ B, unsigned long long cbase,
                                                    const Epi &epi) {
  __shared__ float sA[BK][BM + 4], sB[BK][BN + 4];
  const int tid = threadIdx.x, ty = tid / (BN / 4), tx = tid % (BN / 4);
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
      acc[i][j] = 0.0f;
  for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
    for (int e = tid; e < BM * BK; e += 256) { // consecutive threads along the contiguous dim
      const int m = TA ? e % BM : e / BK, k = TA ? e / BM : e % BK;
      const int gm = m0 + m, gk = k0 + k;
      sA[k][m] = (gm < M && gk < K) ? kf_el<DT>::f(A[TA ? (unsigned long long)gk * M + gm : (unsigned long long)gm * K + gk]) : 0.0f;
    }
#pragma unroll
    for (int e = tid; e < BN * BK; e += 256) {
      const int n = TB ? e / BK : e % BN, k = TB ? e % BK : e / BN;
      const int gn = n0 + n, gk = k0 + k;
      sB[k][n] = (gn < N && gk < K) ? kf_el<DT>::f(B[TB ? (unsigned long long)gn * K + gk : (unsigned long long)gk * N + gn]) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        a[i] = sA[k][ty * 4 + i];
        b[i] = sB[k][tx * 4 + i];
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
          acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int m = m0 + ty * 4 + i, n = n0 + tx * 4 + j;
      if (m < M && n < N)
        epi(cbase + (unsigned long long)m * N + n, acc[i][j]);
    }
}

// Small M, B stored [N][K] (trans_b): a warp per CPW columns, lanes stream K with 16-byte
// loads (CPW independent loads each), a warp-shuffle reduction, then the epilogue.
template <int DT, int M, int N, int K, bool TA, int CPW, int WARPS, class Epi>
static __device__ __forceinline__ void kf_gemv_nk(const typename kf_el<DT>::T *__restrict__ A,
                                                  const typename kf_el<DT>::T *__restrict__ B, unsigned long long cbase,
                                                  const Epi &epi) {
  typedef typename kf_el<DT>::T T;
  constexpr int VE = 16 / sizeof(T);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int nb = (blockIdx.x * WARPS + warp) * CPW;
  float acc[M][CPW];
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int c = 0; c < CPW; ++c)
      acc[m][c] = 0.0f;
  if (K % VE == 0) {
#pragma unroll 2
    for (int kv = lane; kv < K / VE; kv += 32) {
      uint4 w[CPW];
#pragma unroll
      for (int c = 0; c < CPW; ++c)
        w[c] = nb + c < N ? kf_ld16(B + (unsigned long long)(nb + c) * K + kv * VE) : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int m = 0; m < M; ++m) {
        float x[VE];
        if (!TA) {
          const uint4 xv = kf_ld16(A + (unsigned long long)m * K + kv * VE);
#pragma unroll
          for (int j = 0; j < VE; ++j)
            x[j] = kf_el<DT>::at(xv, j);
        } else {
#pragma unroll
          for (int j = 0; j < VE; ++j)
            x[j] = kf_el<DT>::f(A[(unsigned long long)(kv * VE + j) * M + m]);
        }
#pragma unroll
        for (int c = 0; c < CPW; ++c)
#pragma unroll
          for (int j = 0; j < VE; ++j)
            acc[m][c] = fmaf(x[j], kf_el<DT>::at(w[c], j), acc[m][c]);
      }
    }
  } else {
    for (int k = lane; k < K; k += 32) {
      float w[CPW];
#pragma unroll
      for (int c = 0; c < CPW; ++c)
        w[c] = nb + c < N ? kf_el<DT>::f(B[(unsigned long long)(nb + c) * K + k]) : 0.0f;
#pragma unroll
      for (int m = 0; m < M; ++m) {
        const float x = kf_el<DT>::f(A[TA ? (unsigned long long)k * M + m : (unsigned long long)m * K + k]);
#pragma unroll
        for (int c = 0; c < CPW; ++c)
          acc[m][c] = fmaf(x, w[c], acc[m][c]);
      }
    }
  }
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int c = 0; c < CPW; ++c) {
#pragma unroll
      for (int o = 16; o > 0; o >>= 1)
        acc[m][c] += __shfl_xor_sync(0xffffffffu, acc[m][c], o);
      if (lane == ((m * CPW + c) & 31) && nb + c < N)
        epi(cbase + (unsigned long long)m * N + nb + c, acc[m][c]);
    }
}

// Small M, B stored [K][N]: each thread owns 8 (16 bytes of) contiguous columns and every
// KR-th row of K, U loads in flight; the KR partial sums meet in shared memory.
template <int DT, int M, int N, int K, bool TA, int BN, int THREADS, class Epi>
static __device__ __forceinline__ void kf_gemv_kn(const typename kf_el<DT>::T *__restrict__ A,
                                                  const typename kf_el<DT>::T *__restrict__ B, unsigned long long cbase,
                                                  const Epi &epi) {
  typedef typename kf_el<DT>::T T;
  constexpr int VE = 16 / sizeof(T), CT = BN / VE, KR = THREADS / CT, U = M <= 4 ? 8 : 4;
  __shared__ float red[KR][BN + 1];
  const int tid = threadIdx.x, ct = tid % CT, kr = tid / CT;
  const int n0 = blockIdx.x * BN + ct * VE;
  float acc[M][VE];
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int j = 0; j < VE; ++j)
      acc[m][j] = 0.0f;
  for (int kb = 0; kb < K; kb += U * KR) {
    float w[U][VE];
    if (N % VE == 0) {
      uint4 v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int k = kb + u * KR + kr;
        v[u] = (k < K && n0 < N) ? kf_ld16(B + (unsigned long long)k * N + n0) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int j = 0; j < VE; ++j)
          w[u][j] = kf_el<DT>::at(v[u], j);
    } else {
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int k = kb + u * KR + kr;
#pragma unroll
        for (int j = 0; j < VE; ++j)
          w[u][j] = (k < K && n0 + j < N) ? kf_el<DT>::f(B[(unsigned long long)k * N + n0 + j]) : 0.0f;
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int k = kb + u * KR + kr;
      if (k < K) {
#pragma unroll
        for (int m = 0; m < M; ++m) {
          const float x = kf_el<DT>::f(A[TA ? (unsigned long long)k * M + m : (unsigned long long)m * K + k]);
#pragma unroll
          for (int j = 0; j < VE; ++j)
            acc[m][j] = fmaf(x, w[u][j], acc[m][j]);
        }
      }
    }
  }
#pragma unroll
  for (int m = 0; m < M; ++m) {
#pragma unroll
    for (int j = 0; j < VE; ++j)
      red[kr][ct * VE + j] = acc[m][j];
    __syncthreads();
    for (int col = tid; col < BN; col += THREADS) {
      float s = 0.0f;
      for (int r = 0; r < KR; ++r)
        s += red[r][col];
      const int n = blockIdx.x * BN + col;
      if (n < N)
        epi(cbase + (unsigned long long)m * N + n, s);
    }
    __syncthreads();
  }
}
)";

const char *gemmPrelude() { return kGemmPrelude; }

static int dtCode(DType t) { return t == DType::F32 ? 0 : t == DType::F16 ? 1 : 2; }
static const char *storage(DType t) { return t == DType::F32 ? "float" : "unsigned short"; }

/// `expr` for the element offset of an operand's batch at output batch index `z` (its matrix
/// index with `unit` = the operand's matrix size).
static std::string batchOffset(const GemmSpec &s, const std::vector<int64_t> &stride,
                               int64_t unit = 1) {
  std::string sum;
  int64_t inner = 1;
  for (size_t j = s.batchShape.size(); j-- > 0;) {
    if (stride[j] != 0 && s.batchShape[j] != 1) {
      std::string c = inner == 1 ? "z" : fmt::format("(z / {}u)", inner);
      if (j != 0)
        c = fmt::format("({} % {}u)", c, s.batchShape[j]);
      sum += fmt::format("{}(unsigned long long){} * {}ull", sum.empty() ? "" : " + ", c,
                         stride[j] / unit);
    }
    inner *= s.batchShape[j];
  }
  return sum.empty() ? "0ull" : sum;
}

void emitGemmKernel(Emitter &e, const KernelSpec &k) {
  const GemmSpec &s = *k.gemm;
  emitElementFunction(e, k);
  e.blank();
  std::string args = kernelPointerArgs(k);
  std::string fields;
  for (size_t j = 0; j < k.inputs.size(); ++j)
    fields += fmt::format("const {} *in{}; ", storage(k.inputs[j].type.dtype), j);
  for (size_t j = 0; j < k.outputs.size(); ++j)
    fields += fmt::format("{} *out{}; ", storage(k.outputs[j].tensor.type.dtype), j);
  e.line("// {}: {}", s.describe(), s.why);
  // The epilogue functor: value(i, acc) computes element i of every full output (`vals`;
  // outputs smaller than the iteration space are stored by the element function itself),
  // store(i, v) stores them, operator() does both. Kernels compute a run of values before
  // storing any, so the epilogue's loads (bias, residual) are in flight together. Where the
  // kernel has one output, full and 16-bit, `staged` lets the Hopper kernel store its values
  // itself, row-contiguous through shared memory (out() is that output).
  std::string valFields, valArgs, valStores;
  for (size_t j = 0; j < k.outputs.size(); ++j)
    if (k.outputs[j].tensor.full) {
      valFields += fmt::format(" {} r{};", storage(k.outputs[j].tensor.type.dtype), j);
      valArgs += fmt::format(", v.r{}", j);
      valStores += fmt::format(" out{}[i] = v.r{};", j, j);
    }
  bool staged = k.outputs.size() == 1 && k.outputs[0].tensor.full &&
                k.outputs[0].tensor.type.dtype != DType::F32;
  const char *idx = k.wide() ? "unsigned long long" : "unsigned";
  e.openScope("struct {}_epi", k.mangled);
  e.line("{}", fields.substr(0, fields.size() - 1));
  e.line("struct vals {{{} }};", valFields.empty() ? " char none;" : valFields);
  e.line("__device__ __forceinline__ vals value(unsigned long long i, float acc) const {{ vals v; "
         "{}_elem(({})i, acc, {}{}); return v; }}",
         k.mangled, idx, args, valArgs);
  e.line("__device__ __forceinline__ void store(unsigned long long i, const vals &v) const {{{}{} }}",
         valStores.empty() ? " (void)i; (void)v;" : "", valStores);
  e.line("__device__ __forceinline__ void operator()(unsigned long long i, float acc) const {{ "
         "store(i, value(i, acc)); }}");
  e.line("__device__ __forceinline__ void prefetch(unsigned long long i) const {{ "
         "{}_prefetch(({})i, {}); }}",
         k.mangled, idx, args);
  e.line("static constexpr bool staged = {};", staged ? "true" : "false");
  e.line("__device__ __forceinline__ unsigned short *out() const {{ return {}; }}",
         staged ? "out0" : "nullptr");
  e.closeScope(";");
  if (s.kernel == GemmKernel::Wgmma) // one block per SM: the register split needs them all
    e.openScope("extern \"C\" __global__ void __launch_bounds__({}, 1){} {}(const __grid_constant__ "
                "kf_tmap tmA, const __grid_constant__ kf_tmap tmB, {})",
                s.threads(),
                s.cluster > 1 ? fmt::format(" __cluster_dims__({}, 1, 1)", s.cluster) : std::string(),
                k.mangled, kernelPointerParams(k));
  else
    e.openScope("extern \"C\" __global__ void __launch_bounds__({}){} {}({}{})", s.threads(),
                decodeKernelAttributes(s), k.mangled,
                s.tensorMaps() ? "const __grid_constant__ kf_tmap tmB, " : "",
                kernelPointerParams(k));
  if (k.numel() == 0) { // nothing to compute (M, N or a batch dim is 0): never launched, and
    e.line("// no elements: the runtime never launches it"); // no template takes M = 0
    e.closeScope();
    return;
  }
  if (s.kernel == GemmKernel::Wgmma) { // A's and B's matrix (TMA coordinate) for batch z
    e.line("struct {}_z {{ __device__ __forceinline__ int2 operator()(unsigned z) const {{ return "
           "make_int2((int)({}), (int)({})); }} }};",
           k.mangled, batchOffset(s, s.strideA, s.M * s.K), batchOffset(s, s.strideB, s.K * s.N));
  } else {
    e.line("const unsigned z = blockIdx.z;");
  }
  e.line("const {}_epi epi{{{}}};", k.mangled, args);
  std::string ta = s.transA ? "true" : "false", tb = s.transB ? "true" : "false";
  std::string head = fmt::format("{}, {}, {}, {}, {}", dtCode(s.dtype), s.M, s.N, s.K, ta);
  std::string ops = fmt::format("in0 + ({}), in1 + ({}), (unsigned long long)z * {}ull, epi",
                                batchOffset(s, s.strideA), batchOffset(s, s.strideB), s.M * s.N);
  switch (s.kernel) {
  case GemmKernel::Wgmma:
    // Persistent (no blockIdx.z): the batch's A and B matrices from inside the tile loop.
    e.line("const {}_z zidx{{}};", k.mangled);
    e.line("kf_gemm_wg<{}, {}, {}, {}, {}, {}, {}, {}, {}_epi, {}_z>(&tmA, &tmB, zidx, epi);", head,
           tb, s.warpsM, s.bn, s.stages, s.batch(), s.pingpong ? "true" : "false", s.cluster,
           k.mangled, k.mangled);
    break;
  case GemmKernel::TensorCore:
    e.line("kf_gemm_tc<{}, {}, {}, {}, {}, {}, {}, {}, {}>({});", head, tb, s.bm, s.bn, s.bk,
           s.stages, s.warpsM, s.warpsN, k.mangled + "_epi", ops); // DT 0: TF32
    break;
  case GemmKernel::Simt:
    e.line("kf_gemm_simt<{}, {}, {}, {}, {}, {}>({});", head, tb, s.bm, s.bn, s.bk,
           k.mangled + "_epi", ops);
    break;
  case GemmKernel::Gemv:
    if (s.transB)
      e.line("kf_gemv_nk<{}, {}, {}, {}>({});", head, s.bn / s.warpsN, s.warpsN, k.mangled + "_epi",
             ops);
    else
      e.line("kf_gemv_kn<{}, {}, {}, {}>({});", head, s.bn, s.threads(), k.mangled + "_epi", ops);
    break;
  case GemmKernel::Decode: // B's tensor map and its matrix for batch z, when B is by TMA
    e.line("{}", decodeGemmCall(s, head, k.mangled + "_epi",
                                fmt::format("in0 + ({}), in1 + ({}), {}, (unsigned long long)z * "
                                            "{}ull, epi",
                                            batchOffset(s, s.strideA), batchOffset(s, s.strideB),
                                            s.tensorMaps() ? fmt::format("&tmB, (int)({})",
                                                                         batchOffset(s, s.strideB,
                                                                                     s.K * s.N))
                                                           : std::string("nullptr, 0"),
                                            s.M * s.N)));
    break;
  }
  e.closeScope();
}

} // namespace kfuse::codegen
