/* kfuse's C API from another project (find_package(kfuse), target kfuse::c): parses a graph
 * from .kf text, adds an op and an output through the builder, runs it on the reference interpreter and
 * checks the numbers, compiles it (no GPU needed) and prints the fusion report; with a GPU,
 * also runs it on buffers and a stream of the CUDA runtime and checks the outputs. Exits 0
 * when every check passes, 1 otherwise; prints "GPU part skipped" without a GPU. */
#include <kfuse/kfuse.h>

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define TRY(call)                                                                               \
  do {                                                                                          \
    kfuse_status s_ = (call);                                                                   \
    if (s_ != KFUSE_OK) {                                                                       \
      fprintf(stderr, "consumer_c: %s: %s\n", kfuse_status_name(s_), kfuse_last_error());      \
      return 1;                                                                                 \
    }                                                                                           \
  } while (0)

static const char text[] = "graph scale {\n"
                           "  %x = input f32[2, 4]\n"
                           "  %b = input f32[4]\n"
                           "  %s = add %x, %b\n"
                           "  %y = mul %s, 0.5\n"
                           "  output %y\n"
                           "}\n";

static const float x[8] = {1, 2, 3, 4, -1, -2, -3, -4};
static const float b[4] = {1, 1, -1, -1};
/* y = (x + b) * 0.5 and r = relu(y) */
static const float want_y[8] = {1, 1.5f, 1, 1.5f, 0, -0.5f, -2, -2.5f};
static const float want_r[8] = {1, 1.5f, 1, 1.5f, 0, 0, 0, 0};

static int check(const char *what, const float *y, const float *want) {
  int i, bad = 0;
  for (i = 0; i < 8; ++i)
    if (fabsf(y[i] - want[i]) > 1e-6f) {
      fprintf(stderr, "consumer_c: %s: element %d is %g, expected %g\n", what, i, y[i],
              want[i]);
      bad = 1;
    }
  return bad;
}

/* The GPU part: the caller's cudaMalloc'd buffers and stream. */
static int run_on_gpu(kfuse_graph g) {
  kfuse_compile_options o;
  kfuse_module m = NULL;
  kfuse_executable e = NULL;
  void *in[2] = {NULL, NULL}, *out[2] = {NULL, NULL};
  cudaStream_t stream = NULL;
  float y[8], r[8];
  int bad;
  TRY(kfuse_compile_options_init(&o));
  o.arch = "device";
  TRY(kfuse_compile(g, &o, &m));
  TRY(kfuse_executable_create(m, &e));
  kfuse_module_destroy(m);
  if (cudaMalloc(&in[0], sizeof x) != cudaSuccess || cudaMalloc(&in[1], sizeof b) ||
      cudaMalloc(&out[0], sizeof y) || cudaMalloc(&out[1], sizeof r) ||
      cudaStreamCreate(&stream) ||
      cudaMemcpy(in[0], x, sizeof x, cudaMemcpyHostToDevice) ||
      cudaMemcpy(in[1], b, sizeof b, cudaMemcpyHostToDevice)) {
    fprintf(stderr, "consumer_c: CUDA runtime: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  TRY(kfuse_executable_launch(e, (const void *const *)in, 2, out, 2, stream));
  if (cudaStreamSynchronize(stream) || cudaMemcpy(y, out[0], sizeof y, cudaMemcpyDeviceToHost) ||
      cudaMemcpy(r, out[1], sizeof r, cudaMemcpyDeviceToHost)) {
    fprintf(stderr, "consumer_c: CUDA runtime: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  bad = check("GPU", y, want_y) | check("GPU", r, want_r);
  kfuse_executable_destroy(e);
  cudaStreamDestroy(stream);
  cudaFree(in[0]);
  cudaFree(in[1]);
  cudaFree(out[0]);
  cudaFree(out[1]);
  if (!bad)
    printf("consumer_c: GPU part: outputs match\n");
  return bad;
}

int main(void) {
  kfuse_graph_set set = NULL;
  kfuse_graph g = NULL;
  kfuse_value y = NULL, r = NULL;
  kfuse_compile_options o;
  kfuse_module m = NULL;
  const void *in[2];
  void *out[2];
  float got_y[8], got_r[8];
  const char *report = NULL, *name = NULL;
  size_t kernels = 0;
  int bad = 0;

  TRY(kfuse_parse_string(text, "scale.kf", &set));
  TRY(kfuse_graph_set_get(set, "scale", &g));
  kfuse_graph_set_destroy(set);
  /* One more op on the parsed graph, and it becomes the output instead of %y: a new graph
   * with relu(y) as its only output would be built the same way from scratch. */
  /* One more op on the parsed graph, through the builder: a second output, relu(y). */
  TRY(kfuse_graph_find(g, "y", &y));
  TRY(kfuse_graph_add_op(g, "relu", &y, 1, NULL, &r));
  TRY(kfuse_value_set_name(g, r, "r"));
  TRY(kfuse_graph_add_output(g, r));

  in[0] = x;
  in[1] = b;
  out[0] = got_y;
  out[1] = got_r;
  TRY(kfuse_run_cpu(g, in, 2, out, 2));
  bad |= check("interpreter", got_y, want_y);
  bad |= check("interpreter", got_r, want_r);

  TRY(kfuse_compile_options_init(&o));
  o.stage = KFUSE_STAGE_SOURCE;
  TRY(kfuse_compile(g, &o, &m));
  TRY(kfuse_module_num_kernels(m, &kernels));
  TRY(kfuse_module_kernel_name(m, 0, &name));
  TRY(kfuse_module_report_json(m, &report));
  if (kernels != 1 || !strstr(report, name)) {
    fprintf(stderr, "consumer_c: expected one kernel named in the report, got %zu:\n%s",
            kernels, report);
    bad = 1;
  }
  kfuse_module_destroy(m);

  if (kfuse_device_get(NULL, NULL, NULL, NULL) == KFUSE_ERROR_NO_DEVICE)
    printf("consumer_c: GPU part skipped: %s\n", kfuse_last_error());
  else
    bad |= run_on_gpu(g);
  kfuse_graph_destroy(g);
  if (bad)
    return 1;
  printf("consumer_c: ok (1 fused kernel; interpreter matches)\n");
  return 0;
}
