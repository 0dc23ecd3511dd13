/* The C API on a GPU: a matmul + bias + gelu_tanh graph compiled for the device, launched on
 * buffers and a stream the caller owns (allocated here through the CUDA driver, opened with
 * dlopen as kfuse itself does, so nothing links it), replayed as a CUDA graph and rebound to
 * other buffers, each time checked against the reference interpreter (kfuse_run_cpu).
 * Exits 77 (ctest: skipped) when there is no CUDA driver or device, 0 when every check
 * passes, 1 otherwise. Compiled as C99. */
#include <kfuse/kfuse.h>

#include <cuda.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define OK(call)                                                                                \
  do {                                                                                          \
    kfuse_status s_ = (call);                                                                   \
    if (s_ != KFUSE_OK) {                                                                       \
      fprintf(stderr, "%s:%d: %s returned %s: %s\n", __FILE__, __LINE__, #call,                 \
              kfuse_status_name(s_), kfuse_last_error());                                       \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

/* The driver functions this test calls, from the driver kfuse also opened. */
static struct {
  CUresult (*memAlloc)(CUdeviceptr *, size_t);
  CUresult (*memFree)(CUdeviceptr);
  CUresult (*htod)(CUdeviceptr, const void *, size_t);
  CUresult (*dtoh)(void *, CUdeviceptr, size_t);
  CUresult (*streamCreate)(CUstream *, unsigned);
  CUresult (*streamSync)(CUstream);
  CUresult (*streamDestroy)(CUstream);
} cu;

static void cu_check(CUresult r, const char *what) {
  if (r != CUDA_SUCCESS) {
    fprintf(stderr, "capi_gpu_test: %s failed: CUDA error %d\n", what, (int)r);
    exit(1);
  }
}

static void *load(void *lib, const char *name) {
  void *f = dlsym(lib, name);
  if (!f) {
    fprintf(stderr, "capi_gpu_test: the CUDA driver lacks %s\n", name);
    exit(1);
  }
  return f;
}

static void open_driver(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "capi_gpu_test: libcuda.so.1: %s\n", dlerror());
    exit(1);
  }
  /* POSIX: a function pointer from dlsym through memcpy (ISO C has no void* -> function cast). */
#define LOAD(field, name)                                                                       \
  do {                                                                                          \
    void *p_ = load(lib, name);                                                                 \
    memcpy(&cu.field, &p_, sizeof p_);                                                          \
  } while (0)
  LOAD(memAlloc, "cuMemAlloc_v2");
  LOAD(memFree, "cuMemFree_v2");
  LOAD(htod, "cuMemcpyHtoD_v2");
  LOAD(dtoh, "cuMemcpyDtoH_v2");
  LOAD(streamCreate, "cuStreamCreate");
  LOAD(streamSync, "cuStreamSynchronize");
  LOAD(streamDestroy, "cuStreamDestroy_v2");
#undef LOAD
}

enum { M = 64, N = 128, K = 256 };

/* y = gelu_tanh(x W^T + b) in bf16, and y as f32. */
static kfuse_graph build(void) {
  kfuse_graph g = NULL;
  kfuse_value x, w, b, h, hb, y, y32, ops[2];
  const int64_t xs[] = {M, K}, ws[] = {N, K}, bs[] = {N};
  OK(kfuse_graph_create("gpu_mlp", &g));
  OK(kfuse_graph_add_input(g, "x", KFUSE_BF16, xs, 2, &x));
  OK(kfuse_graph_add_input(g, "w", KFUSE_BF16, ws, 2, &w));
  OK(kfuse_graph_add_input(g, "b", KFUSE_BF16, bs, 1, &b));
  ops[0] = x;
  ops[1] = w;
  OK(kfuse_graph_add_op(g, "matmul", ops, 2, "trans_b=true", &h));
  ops[0] = h;
  ops[1] = b;
  OK(kfuse_graph_add_op(g, "add", ops, 2, NULL, &hb));
  OK(kfuse_graph_add_op(g, "gelu_tanh", &hb, 1, NULL, &y));
  OK(kfuse_graph_add_op(g, "cast", &y, 1, "to=f32", &y32));
  OK(kfuse_graph_add_output(g, y));
  OK(kfuse_graph_add_output(g, y32));
  return g;
}

/* Deterministic values in [-0.5, 0.5), stored as bf16. */
static void fill(unsigned short *bits, size_t n, unsigned seed) {
  float *f = malloc(n * sizeof *f);
  size_t i;
  for (i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    f[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
  }
  OK(kfuse_encode(KFUSE_BF16, f, n, bits));
  free(f);
}

/* The device's outputs against the interpreter's: bf16 y and f32 y, within bf16's rounding. */
static void compare(const char *what, CUdeviceptr y_dev, CUdeviceptr y32_dev,
                    const float *want) {
  unsigned short y_bits[M * N];
  float y[M * N], y32[M * N];
  size_t i, bad = 0;
  cu_check(cu.dtoh(y_bits, y_dev, sizeof y_bits), "copying y back");
  cu_check(cu.dtoh(y32, y32_dev, sizeof y32), "copying y32 back");
  OK(kfuse_decode(KFUSE_BF16, y_bits, M * N, y));
  for (i = 0; i < M * N; ++i) {
    float tol = 2e-2f + 2e-2f * fabsf(want[i]);
    if (!(fabsf(y[i] - want[i]) <= tol) || !(fabsf(y32[i] - want[i]) <= tol)) {
      if (bad++ < 5)
        fprintf(stderr, "%s: element %zu: y %g, y32 %g, interpreter %g\n", what, i, y[i],
                y32[i], want[i]);
    }
  }
  if (bad) {
    fprintf(stderr, "%s: %zu of %d elements differ\n", what, bad, M * N);
    ++failures;
  }
}

/* The interpreter's y for the inputs, as floats. */
static void reference(kfuse_graph g, const unsigned short *x, const unsigned short *w,
                      const unsigned short *b, float *want) {
  static unsigned short y_bits[M * N];
  static float y32[M * N];
  const void *in[3];
  void *out[2];
  in[0] = x;
  in[1] = w;
  in[2] = b;
  out[0] = y_bits;
  out[1] = y32;
  OK(kfuse_run_cpu(g, in, 3, out, 2));
  OK(kfuse_decode(KFUSE_BF16, y_bits, M * N, want));
}

/* A device buffer of `bytes`, holding `host` when not NULL; *ptr is it as a void *. */
static CUdeviceptr device_buffer(const void *host, size_t bytes, void **ptr) {
  CUdeviceptr d = 0;
  cu_check(cu.memAlloc(&d, bytes), "cuMemAlloc");
  if (host)
    cu_check(cu.htod(d, host, bytes), "copying an input");
  *ptr = (void *)(uintptr_t)d;
  return d;
}

/* Errors: wrong buffer counts, a module without cubins, a module for another GPU. */
static void check_errors(kfuse_graph g, kfuse_executable e, void **in_ptr, void **out_ptr,
                         int major) {
  kfuse_compile_options o;
  kfuse_module wrong = NULL;
  kfuse_executable other = NULL;
  if (kfuse_executable_launch(e, (const void *const *)in_ptr, 2, out_ptr, 2, NULL) !=
          KFUSE_ERROR_INVALID_ARGUMENT ||
      !strstr(kfuse_last_error(), "3 inputs")) {
    fprintf(stderr, "wrong input count: %s\n", kfuse_last_error());
    ++failures;
  }
  OK(kfuse_compile_options_init(&o));
  o.stage = KFUSE_STAGE_SOURCE;
  OK(kfuse_compile(g, &o, &wrong));
  if (kfuse_executable_create(wrong, &other) != KFUSE_ERROR_INVALID_ARGUMENT ||
      !strstr(kfuse_last_error(), "KFUSE_STAGE_CUBIN")) {
    fprintf(stderr, "source-only module: %s\n", kfuse_last_error());
    ++failures;
  }
  OK(kfuse_module_destroy(wrong));
  wrong = NULL;
  OK(kfuse_compile_options_init(&o));
  o.arch = major == 8 ? "sm_90" : "sm_80";
  OK(kfuse_compile(g, &o, &wrong));
  if (kfuse_executable_create(wrong, &other) != KFUSE_ERROR_INVALID_ARGUMENT ||
      !strstr(kfuse_last_error(), "\"device\"")) {
    fprintf(stderr, "module for another GPU: %s\n", kfuse_last_error());
    ++failures;
  }
  OK(kfuse_module_destroy(wrong));
}

int main(void) {
  const char *name = NULL;
  int major = 0, minor = 0, sms = 0;
  kfuse_status s = kfuse_device_get(&name, &major, &minor, &sms);
  static unsigned short x[M * K], w[N * K], b[N];
  static float want[M * N];
  kfuse_graph g;
  kfuse_compile_options o;
  kfuse_module m = NULL;
  kfuse_executable e = NULL;
  CUdeviceptr in_dev[3], out_dev[2], out2_dev[2];
  void *in_ptr[3], *out_ptr[2], *out2_ptr[2];
  CUstream stream = NULL;
  int i;

  if (s == KFUSE_ERROR_NO_DEVICE) {
    fprintf(stderr, "capi_gpu_test: %s: skipped\n", kfuse_last_error());
    return 77;
  }
  OK(s);
  fprintf(stderr, "capi_gpu_test: %s (sm_%d%d, %d SMs)\n", name, major, minor, sms);
  open_driver();

  g = build();
  fill(x, M * K, 1);
  fill(w, N * K, 2);
  fill(b, N, 3);
  reference(g, x, w, b, want);

  OK(kfuse_compile_options_init(&o));
  o.arch = "device";
  OK(kfuse_compile(g, &o, &m));
  OK(kfuse_executable_create(m, &e));
  OK(kfuse_module_destroy(m)); /* the executable keeps what it needs */

  in_dev[0] = device_buffer(x, sizeof x, &in_ptr[0]);
  in_dev[1] = device_buffer(w, sizeof w, &in_ptr[1]);
  in_dev[2] = device_buffer(b, sizeof b, &in_ptr[2]);
  for (i = 0; i < 2; ++i) { /* y (bf16) and y32 (f32), twice */
    size_t bytes = i == 0 ? M * N * 2 : M * N * 4;
    out_dev[i] = device_buffer(NULL, bytes, &out_ptr[i]);
    out2_dev[i] = device_buffer(NULL, bytes, &out2_ptr[i]);
  }
  cu_check(cu.streamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");

  OK(kfuse_executable_launch(e, (const void *const *)in_ptr, 3, out_ptr, 2, stream));
  cu_check(cu.streamSync(stream), "cuStreamSynchronize");
  compare("launch", out_dev[0], out_dev[1], want);

  OK(kfuse_executable_replay(e, (const void *const *)in_ptr, 3, out2_ptr, 2, stream));
  cu_check(cu.streamSync(stream), "cuStreamSynchronize");
  compare("replay", out2_dev[0], out2_dev[1], want);
  /* Other buffers: the recorded graph is pointed at them. */
  OK(kfuse_executable_replay(e, (const void *const *)in_ptr, 3, out_ptr, 2, stream));
  cu_check(cu.streamSync(stream), "cuStreamSynchronize");
  OK(kfuse_executable_replay(e, (const void *const *)in_ptr, 3, out_ptr, 2, NULL));
  cu_check(cu.streamSync(NULL), "cuStreamSynchronize");
  compare("replay rebound", out_dev[0], out_dev[1], want);

  check_errors(g, e, in_ptr, out_ptr, major);

  OK(kfuse_executable_destroy(e));
  cu_check(cu.streamDestroy(stream), "cuStreamDestroy");
  for (i = 0; i < 3; ++i)
    cu.memFree(in_dev[i]);
  for (i = 0; i < 2; ++i) {
    cu.memFree(out_dev[i]);
    cu.memFree(out2_dev[i]);
  }
  OK(kfuse_graph_destroy(g));
  if (failures) {
    fprintf(stderr, "capi_gpu_test: %d check(s) failed\n", failures);
    return 1;
  }
  printf("capi_gpu_test: all checks passed\n");
  return 0;
}
