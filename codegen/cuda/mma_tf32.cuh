// kfuse-provides: kf_tf32 kf_mma_tf32

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
