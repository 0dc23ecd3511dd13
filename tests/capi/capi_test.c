/* The C API (include/kfuse/kfuse.h) from C, without a GPU: builds a small MLP through the
 * API, compiles it to cubins (NVRTC needs no GPU), reads the JSON report and the kernels'
 * CUDA C, runs it on the reference interpreter against numbers computed by hand, parses .kf
 * text, and checks that bad input gives the right code and a message naming what was wrong.
 * Compiled as C99. Exits 0 when every check passes, 1 otherwise. */
#include <kfuse/kfuse.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                                             \
  do {                                                                                          \
    if (!(cond)) {                                                                              \
      fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);                 \
      ++failures;                                                                               \
    }                                                                                           \
  } while (0)

/* A call that must succeed; prints the library's message when it does not. */
#define OK(call)                                                                                \
  do {                                                                                          \
    kfuse_status s_ = (call);                                                                   \
    if (s_ != KFUSE_OK) {                                                                       \
      fprintf(stderr, "%s:%d: %s returned %s: %s\n", __FILE__, __LINE__, #call,                 \
              kfuse_status_name(s_), kfuse_last_error());                                       \
      ++failures;                                                                               \
    }                                                                                           \
  } while (0)

/* A call that must fail with `code` and a message containing each of the strings. */
static void expect_error(const char *what, kfuse_status got, kfuse_status code, const char *a,
                         const char *b) {
  const char *msg = kfuse_last_error();
  if (got != code) {
    fprintf(stderr, "%s: expected %s, got %s (%s)\n", what, kfuse_status_name(code),
            kfuse_status_name(got), msg);
    ++failures;
    return;
  }
  if ((a && !strstr(msg, a)) || (b && !strstr(msg, b))) {
    fprintf(stderr, "%s: message '%s' lacks '%s' or '%s'\n", what, msg, a ? a : "",
            b ? b : "");
    ++failures;
  }
}

/* y = relu(x W^T + b), z = cast(y * 0.5, to=bf16): x f32[2, 3], W f32[4, 3], b f32[4]. */
static kfuse_graph build_mlp(void) {
  kfuse_graph g = NULL;
  kfuse_value x, w, b, h, hb, y, half, scaled, z;
  const int64_t xs[] = {2, 3}, ws[] = {4, 3}, bs[] = {4};
  OK(kfuse_graph_create("mlp", &g));
  OK(kfuse_graph_add_input(g, "x", KFUSE_F32, xs, 2, &x));
  OK(kfuse_graph_add_input(g, "w", KFUSE_F32, ws, 2, &w));
  OK(kfuse_graph_add_input(g, "b", KFUSE_F32, bs, 1, &b));
  {
    kfuse_value ops[2];
    ops[0] = x;
    ops[1] = w;
    OK(kfuse_graph_add_op(g, "matmul", ops, 2, "trans_b=true", &h));
    ops[0] = h;
    ops[1] = b;
    OK(kfuse_graph_add_op(g, "add", ops, 2, NULL, &hb));
    OK(kfuse_graph_add_op(g, "relu", &hb, 1, "", &y));
    OK(kfuse_graph_literal(g, 0.5, &half));
    ops[0] = y;
    ops[1] = half;
    OK(kfuse_graph_add_op(g, "mul", ops, 2, NULL, &scaled));
    OK(kfuse_graph_add_op(g, "cast", &scaled, 1, "to=bf16", &z));
  }
  OK(kfuse_value_set_name(g, h, "h"));
  OK(kfuse_value_set_name(g, y, "y"));
  OK(kfuse_value_set_name(g, z, "z"));
  OK(kfuse_graph_add_output(g, y));
  OK(kfuse_graph_add_output(g, z));
  OK(kfuse_graph_verify(g));
  return g;
}

static void test_build_and_inspect(kfuse_graph g) {
  size_t n = 0, rank = 0, bytes = 0;
  int64_t dims[4] = {0, 0, 0, 0};
  kfuse_value v = NULL, found = NULL;
  kfuse_dtype dt = KFUSE_F32;
  const char *text = NULL, *name = NULL;
  OK(kfuse_graph_num_inputs(g, &n));
  CHECK(n == 3);
  OK(kfuse_graph_num_outputs(g, &n));
  CHECK(n == 2);
  OK(kfuse_graph_output(g, 1, &v));
  OK(kfuse_value_dtype(g, v, &dt));
  CHECK(dt == KFUSE_BF16);
  OK(kfuse_value_shape(g, v, NULL, 0, &rank));
  CHECK(rank == 2);
  OK(kfuse_value_shape(g, v, dims, 4, &rank));
  CHECK(dims[0] == 2 && dims[1] == 4);
  OK(kfuse_value_bytes(g, v, &bytes));
  CHECK(bytes == 2 * 4 * 2);
  OK(kfuse_value_name(g, v, &name));
  CHECK(name && strcmp(name, "z") == 0);
  OK(kfuse_graph_find(g, "z", &found));
  CHECK(found == v);
  OK(kfuse_graph_name(g, &name));
  CHECK(name && strcmp(name, "mlp") == 0);
  OK(kfuse_graph_print(g, &text));
  CHECK(text && strstr(text, "graph mlp {"));
  CHECK(text && strstr(text, "%h = matmul %x, %w, trans_b=true"));
  CHECK(text && strstr(text, "cast"));
  CHECK(text && strstr(text, "to=bf16"));
}

static void test_compile(kfuse_graph g) {
  kfuse_compile_options o;
  kfuse_module m = NULL;
  size_t n = 0, i;
  const char *json = NULL, *src = NULL, *name = NULL, *arch = NULL, *plan = NULL;
  double seconds = 0;
  OK(kfuse_compile_options_init(&o));
  CHECK(o.struct_size == sizeof o && o.fusion == 1 && o.tf32 == 0 && o.stage == KFUSE_STAGE_CUBIN);
  o.arch = "sm_90";
  o.jobs = 1;
  OK(kfuse_compile(g, &o, &m));
  if (!m)
    return;
  OK(kfuse_module_arch(m, &arch));
  CHECK(arch && strcmp(arch, "sm_90") == 0);
  OK(kfuse_module_num_kernels(m, &n));
  CHECK(n == 1); /* matmul + bias + relu + scale + cast: one GEMM with its epilogue */
  for (i = 0; i < n; ++i) {
    OK(kfuse_module_kernel_name(m, i, &name));
    OK(kfuse_module_kernel_source(m, i, &src));
    CHECK(name && name[0] == 'k');
    CHECK(src && strstr(src, "__global__"));
  }
  OK(kfuse_module_kernel_name(m, 0, &name));
  CHECK(name && strcmp(name, "k0") == 0);
  OK(kfuse_module_report_json(m, &json));
  CHECK(json && strstr(json, "\"graph\": \"mlp\""));
  CHECK(json && strstr(json, "\"fused\""));
  CHECK(json && strstr(json, "\"k0\""));
  OK(kfuse_module_kernels_json(m, &json));
  CHECK(json && strstr(json, "\"kernels\""));
  CHECK(json && strstr(json, "\"k0\""));
  CHECK(json && strstr(json, "\"arch\": \"sm_90\""));
  OK(kfuse_module_fusion_json(m, &json));
  CHECK(json && json[0] == '[');
  OK(kfuse_module_plan(m, &plan));
  CHECK(plan && strstr(plan, "kernel k0"));
  OK(kfuse_module_expected_seconds(m, &seconds));
  CHECK(seconds > 0);
  expect_error("kernel index", kfuse_module_kernel_source(m, 7, &src),
               KFUSE_ERROR_INVALID_ARGUMENT, "7", "1 kernel");
  OK(kfuse_module_destroy(m));

  /* Unfused, to source only: every op its own kernel, no NVRTC. */
  m = NULL;
  OK(kfuse_compile_options_init(&o));
  o.fusion = 0;
  o.stage = KFUSE_STAGE_SOURCE;
  OK(kfuse_compile(g, &o, &m));
  OK(kfuse_module_num_kernels(m, &n));
  CHECK(n == 5);
  OK(kfuse_module_destroy(m));

  /* Options with a bad arch or device model. */
  m = NULL;
  OK(kfuse_compile_options_init(&o));
  o.arch = "sm_1";
  expect_error("bad arch", kfuse_compile(g, &o, &m), KFUSE_ERROR_INVALID_ARGUMENT, "sm_1",
               NULL);
  CHECK(m == NULL);
  OK(kfuse_compile_options_init(&o));
  o.device = "nosuchgpu";
  expect_error("bad device", kfuse_compile(g, &o, &m), KFUSE_ERROR_INVALID_ARGUMENT,
               "nosuchgpu", NULL);
  OK(kfuse_compile_options_init(&o));
  o.struct_size = 4;
  expect_error("options size", kfuse_compile(g, &o, &m), KFUSE_ERROR_INVALID_ARGUMENT,
               "kfuse_compile_options_init", NULL);
}

static void test_run_cpu(kfuse_graph g) {
  /* x = [[1, 2, 3], [-1, 0, 1]]; W's rows e0, e1, e2, (1, 1, 1); b = [0.5, -1, -4, 1]:
   * x W^T = [[1, 2, 3, 6], [-1, 0, 1, 0]]; + b = [[1.5, 1, -1, 7], [-0.5, -1, -3, 1]];
   * relu = [[1.5, 1, 0, 7], [0, 0, 0, 1]]; * 0.5 in bf16 = [[0.75, 0.5, 0, 3.5], [0, 0, 0, 0.5]]. */
  const float x[] = {1, 2, 3, -1, 0, 1};
  const float w[] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1};
  const float b[] = {0.5f, -1, -4, 1};
  const float want_y[] = {1.5f, 1, 0, 7, 0, 0, 0, 1};
  const float want_z[] = {0.75f, 0.5f, 0, 3.5f, 0, 0, 0, 0.5f};
  float y[8], z[8];
  unsigned short z_bits[8];
  const void *inputs[3];
  void *outputs[2];
  int i;
  inputs[0] = x;
  inputs[1] = w;
  inputs[2] = b;
  outputs[0] = y;
  outputs[1] = z_bits;
  memset(y, 0, sizeof y);
  OK(kfuse_run_cpu(g, inputs, 3, outputs, 2));
  OK(kfuse_decode(KFUSE_BF16, z_bits, 8, z));
  for (i = 0; i < 8; ++i) {
    if (y[i] != want_y[i] || z[i] != want_z[i]) {
      fprintf(stderr, "run_cpu: element %d: y %g (want %g), z %g (want %g)\n", i, y[i],
              want_y[i], z[i], want_z[i]);
      ++failures;
    }
  }
  expect_error("run_cpu input count", kfuse_run_cpu(g, inputs, 2, outputs, 2),
               KFUSE_ERROR_INVALID_ARGUMENT, "3 inputs", "2");
  inputs[1] = NULL;
  expect_error("run_cpu null buffer", kfuse_run_cpu(g, inputs, 3, outputs, 2),
               KFUSE_ERROR_INVALID_ARGUMENT, "input 1", "NULL");
  {
    /* encode/decode round trip: 1/3 rounds to bf16's 0.333984375. */
    const float third = 1.0f / 3.0f;
    unsigned short bits = 0;
    float back = 0;
    size_t size = 0;
    OK(kfuse_encode(KFUSE_BF16, &third, 1, &bits));
    OK(kfuse_decode(KFUSE_BF16, &bits, 1, &back));
    CHECK(back == 0.333984375f);
    OK(kfuse_encode(KFUSE_F16, &third, 1, &bits));
    OK(kfuse_decode(KFUSE_F16, &bits, 1, &back));
    CHECK(fabsf(back - third) < 1e-3f && back != third);
    OK(kfuse_dtype_size(KFUSE_F32, &size));
    CHECK(size == 4);
    expect_error("bad dtype", kfuse_dtype_size((kfuse_dtype)9, &size),
                 KFUSE_ERROR_INVALID_ARGUMENT, "dtype", "9");
    expect_error("negative dtype", kfuse_dtype_size((kfuse_dtype)-1, &size),
                 KFUSE_ERROR_INVALID_ARGUMENT, "dtype", "-1");
  }
}

static void test_errors(kfuse_graph g) {
  kfuse_value x = NULL, w = NULL, b = NULL, out = NULL, lit = NULL, ops[2];
  kfuse_graph other = NULL;
  kfuse_value foreign = NULL;
  const int64_t s3[] = {3};
  OK(kfuse_graph_find(g, "x", &x));
  OK(kfuse_graph_find(g, "w", &w));
  OK(kfuse_graph_find(g, "b", &b));

  expect_error("unknown op", kfuse_graph_add_op(g, "gelu_fast", &x, 1, NULL, &out),
               KFUSE_ERROR_UNKNOWN_OP, "gelu_fast", "gelu_tanh");
  CHECK(out == NULL);
  expect_error("input as op", kfuse_graph_add_op(g, "input", NULL, 0, NULL, &out),
               KFUSE_ERROR_UNKNOWN_OP, "kfuse_graph_add_input", NULL);
  expect_error("operand count", kfuse_graph_add_op(g, "add", &x, 1, NULL, &out),
               KFUSE_ERROR_BAD_OPERANDS, "add", "expects 2 operands, got 1");
  ops[0] = x;
  ops[1] = w;
  expect_error("matmul shapes", kfuse_graph_add_op(g, "matmul", ops, 2, NULL, &out),
               KFUSE_ERROR_TYPE, "matmul", "f32[4, 3]");
  ops[1] = b;
  expect_error("broadcast", kfuse_graph_add_op(g, "add", ops, 2, NULL, &out), KFUSE_ERROR_TYPE,
               "add: shapes [2, 3] and [4]", "do not broadcast");
  ops[1] = w;
  expect_error("attr value", kfuse_graph_add_op(g, "matmul", ops, 2, "trans_b=yes", &out),
               KFUSE_ERROR_BAD_ATTRIBUTE, "trans_b", "true or false");
  expect_error("attr name", kfuse_graph_add_op(g, "matmul", ops, 2, "transb=true", &out),
               KFUSE_ERROR_BAD_ATTRIBUTE, "transb", "trans_a, trans_b");
  expect_error("attr of another op", kfuse_graph_add_op(g, "add", ops, 2, "to=f32", &out),
               KFUSE_ERROR_BAD_ATTRIBUTE, "add", "no attributes");
  expect_error("attr syntax", kfuse_graph_add_op(g, "matmul", ops, 2, "trans_b", &out),
               KFUSE_ERROR_BAD_ATTRIBUTE, "trans_b", "name=value");
  expect_error("attr twice", kfuse_graph_add_op(g, "matmul", ops, 2, "trans_b=true, trans_b=false", &out),
               KFUSE_ERROR_BAD_ATTRIBUTE, "duplicate", "trans_b");
  expect_error("attr missing", kfuse_graph_add_op(g, "cast", &x, 1, NULL, &out),
               KFUSE_ERROR_BAD_ATTRIBUTE, "cast", "to=");
  OK(kfuse_graph_add_op(g, "cast", &x, 1, "to=f16", &out));
  ops[0] = out;
  ops[1] = x;
  out = NULL;
  expect_error("dtypes differ", kfuse_graph_add_op(g, "add", ops, 2, NULL, &out),
               KFUSE_ERROR_TYPE, "dtypes f16 and f32 differ", NULL);
  OK(kfuse_graph_literal(g, 2.0, &lit));
  expect_error("literal operand", kfuse_graph_add_op(g, "exp", &lit, 1, NULL, &out),
               KFUSE_ERROR_BAD_OPERANDS, "exp", "literal");
  expect_error("literal output", kfuse_graph_add_output(g, lit), KFUSE_ERROR_BAD_OPERANDS,
               "literal", NULL);
  expect_error("null operand", kfuse_graph_add_op(g, "exp", NULL, 1, NULL, &out),
               KFUSE_ERROR_INVALID_ARGUMENT, "operands", "NULL");
  expect_error("null graph", kfuse_graph_add_op(NULL, "exp", &x, 1, NULL, &out),
               KFUSE_ERROR_INVALID_ARGUMENT, "kfuse_graph_add_op", "graph is NULL");
  expect_error("null out", kfuse_graph_add_op(g, "exp", &x, 1, NULL, NULL),
               KFUSE_ERROR_INVALID_ARGUMENT, "out", "NULL");
  expect_error("null op", kfuse_graph_add_op(g, NULL, &x, 1, NULL, &out),
               KFUSE_ERROR_INVALID_ARGUMENT, "op", "NULL");
  expect_error("null handle", kfuse_graph_num_inputs(NULL, NULL), KFUSE_ERROR_INVALID_ARGUMENT,
               "kfuse_graph_num_inputs", "NULL");
  expect_error("duplicate input", kfuse_graph_add_input(g, "x", KFUSE_F32, s3, 1, &out),
               KFUSE_ERROR_INVALID_ARGUMENT, "'x'", "already exists");
  expect_error("negative dim", kfuse_graph_add_input(g, "neg", KFUSE_F32, (const int64_t[]){-2}, 1, &out),
               KFUSE_ERROR_INVALID_ARGUMENT, "neg", "-2");
  expect_error("bad dtype", kfuse_graph_add_input(g, "q", (kfuse_dtype)7, s3, 1, &out),
               KFUSE_ERROR_INVALID_ARGUMENT, "dtype", "7");
  expect_error("not found", kfuse_graph_find(g, "nope", &out), KFUSE_ERROR_NOT_FOUND, "nope",
               NULL);
  expect_error("output index", kfuse_graph_output(g, 2, &out), KFUSE_ERROR_INVALID_ARGUMENT,
               "output 2", "2 outputs");

  OK(kfuse_graph_create("other", &other));
  OK(kfuse_graph_add_input(other, "x", KFUSE_F32, s3, 1, &foreign));
  ops[0] = foreign;
  ops[1] = x;
  expect_error("foreign value", kfuse_graph_add_op(g, "add", ops, 2, NULL, &out),
               KFUSE_ERROR_INVALID_ARGUMENT, "operand 0", "another graph");
  expect_error("no outputs", kfuse_graph_verify(other), KFUSE_ERROR_INVALID_GRAPH, "other",
               "no outputs");
  {
    kfuse_module m = NULL;
    expect_error("compile no outputs", kfuse_compile(other, NULL, &m),
                 KFUSE_ERROR_INVALID_GRAPH, "no outputs", NULL);
    CHECK(m == NULL);
  }
  OK(kfuse_graph_destroy(other));
  OK(kfuse_graph_destroy(NULL));

  /* The message stays until the next failure; a success does not clear it. */
  expect_error("sticky", kfuse_graph_find(g, "nope2", &out), KFUSE_ERROR_NOT_FOUND, NULL, NULL);
  OK(kfuse_graph_find(g, "x", &out));
  CHECK(strstr(kfuse_last_error(), "nope2") != NULL);
  CHECK(strcmp(kfuse_status_name(KFUSE_ERROR_NO_DEVICE), "KFUSE_ERROR_NO_DEVICE") == 0);
  CHECK(strcmp(kfuse_status_name((kfuse_status)99), "KFUSE_ERROR_UNKNOWN_STATUS") == 0);
}

static void test_parse(void) {
  static const char text[] =
      "graph first {\n"
      "  %a = input f32[4]\n"
      "  %b = exp %a\n"
      "  output %b\n"
      "}\n"
      "graph second {\n"
      "  %p = input f16[2, 2]\n"
      "  %q = mul %p, 3\n"
      "  output %q\n"
      "}\n";
  kfuse_graph_set set = NULL;
  kfuse_graph g = NULL;
  size_t n = 0;
  const char *name = NULL;
  OK(kfuse_parse_string(text, "two.kf", &set));
  OK(kfuse_graph_set_count(set, &n));
  CHECK(n == 2);
  OK(kfuse_graph_set_name(set, 1, &name));
  CHECK(name && strcmp(name, "second") == 0);
  expect_error("set needs a name", kfuse_graph_set_get(set, NULL, &g), KFUSE_ERROR_NOT_FOUND,
               "first, second", NULL);
  expect_error("set unknown", kfuse_graph_set_get(set, "third", &g), KFUSE_ERROR_NOT_FOUND,
               "third", "first, second");
  OK(kfuse_graph_set_get(set, "second", &g));
  OK(kfuse_graph_set_destroy(set)); /* the graph is a copy: it outlives its set */
  {
    /* 3 * p in f16, on the interpreter. */
    const float p[] = {1, -2, 0.5f, 100};
    unsigned short in_bits[4], out_bits[4];
    float q[4];
    const void *in[1];
    void *out[1];
    kfuse_value extra = NULL, pv = NULL;
    in[0] = in_bits;
    out[0] = out_bits;
    OK(kfuse_encode(KFUSE_F16, p, 4, in_bits));
    OK(kfuse_run_cpu(g, in, 1, out, 1));
    OK(kfuse_decode(KFUSE_F16, out_bits, 4, q));
    CHECK(q[0] == 3 && q[1] == -6 && q[2] == 1.5f && q[3] == 300);
    /* A parsed graph's values are reachable by name and take more ops. */
    OK(kfuse_graph_find(g, "p", &pv));
    OK(kfuse_graph_add_op(g, "neg", &pv, 1, NULL, &extra));
    OK(kfuse_graph_add_output(g, extra));
    OK(kfuse_graph_num_outputs(g, &n));
    CHECK(n == 2);
  }
  OK(kfuse_graph_destroy(g));

  set = NULL;
  expect_error("parse error", kfuse_parse_string("graph g {\n  %a = input f32[4]\n  %b = frob %a\n}\n", "bad.kf", &set),
               KFUSE_ERROR_PARSE, "bad.kf:3:", "unknown op");
  CHECK(set == NULL);
  expect_error("missing file", kfuse_parse_file("/nonexistent/x.kf", &set), KFUSE_ERROR_IO,
               "/nonexistent/x.kf", NULL);
  expect_error("null text", kfuse_parse_string(NULL, NULL, &set), KFUSE_ERROR_INVALID_ARGUMENT,
               "text", "NULL");
}

/* Reductions and composites on x = [[1, 2, 3], [5, 5, 5]] (f32), run on the interpreter. */
static void test_reductions(void) {
  const int64_t xs[] = {2, 3}, ws[] = {3}, ws2[] = {2}, last[] = {-1}, first[] = {0};
  const int64_t bad[] = {2}, twice[] = {1, -1};
  const float x[] = {1, 2, 3, 5, 5, 5}, w[] = {1, 1, 2}, b[] = {0.5f, -1, 0};
  const double e1 = 1.0 / (1 + exp(1.0) + exp(2.0)), r = 1 / sqrt(14.0 / 3 + 1e-6f);
  const double want[8][6] = {{6, 15}, {5, 5, 5}, {e1, e1 * exp(1.0), e1 * exp(2.0), 1. / 3,
                             1. / 3, 1. / 3}, {log(e1), log(e1) + 1, log(e1) + 2, -log(3.0),
                             -log(3.0), -log(3.0)}, {r, 2 * r, 6 * r, 1, 1, 2},
                             {0.5 - 1.2247357, -1, 1.2247357, 0.5, -1, 0}, {1, 0}, {2, 5}};
  const size_t count[8] = {2, 3, 6, 6, 6, 6, 2, 2};
  kfuse_graph g = NULL;
  kfuse_value xv, wv, bv, w2, v[8], junk;
  float out[8][6];
  void *outputs[8];
  const void *inputs[3];
  const char *text = NULL;
  char before[4096];
  size_t rank = 0, i, j;
  int64_t dims[2] = {0, 0};
  OK(kfuse_graph_create("red", &g));
  OK(kfuse_graph_add_input(g, "x", KFUSE_F32, xs, 2, &xv));
  OK(kfuse_graph_add_input(g, "w", KFUSE_F32, ws, 1, &wv));
  OK(kfuse_graph_add_input(g, "b", KFUSE_F32, ws, 1, &bv));
  OK(kfuse_graph_add_reduction(g, "sum", xv, last, 1, 0, &v[0]));
  OK(kfuse_graph_add_reduction(g, "amax", xv, first, 1, 1, &v[1]));
  OK(kfuse_value_shape(g, v[1], dims, 2, &rank));
  CHECK(rank == 2 && dims[0] == 1 && dims[1] == 3);
  OK(kfuse_graph_add_softmax(g, xv, -1, &v[2]));
  OK(kfuse_graph_add_log_softmax(g, xv, 1, &v[3]));
  OK(kfuse_graph_add_rms_norm(g, xv, wv, 1e-6, &v[4]));
  OK(kfuse_graph_add_layer_norm(g, xv, NULL, bv, 1e-5, &v[5])); /* a bias, no scale */
  OK(kfuse_graph_add_var_mean(g, xv, last, 1, 1.0, 0, &v[6], &v[7]));
  for (i = 0; i < 8; ++i)
    OK(kfuse_graph_add_output(g, v[i]));
  OK(kfuse_graph_verify(g));
  OK(kfuse_graph_print(g, &text));
  CHECK(text && strstr(text, "sum %x, axes=[-1]  # f32[2]"));
  CHECK(text && strstr(text, "amax %x, axes=[0], keepdims=true  # f32[1, 3]"));
  inputs[0] = x;
  inputs[1] = w;
  inputs[2] = b;
  for (i = 0; i < 8; ++i)
    outputs[i] = out[i];
  OK(kfuse_run_cpu(g, inputs, 3, outputs, 8));
  for (i = 0; i < 8; ++i)
    for (j = 0; j < count[i]; ++j)
      if (fabs(out[i][j] - want[i][j]) > 1e-5 * (1 + fabs(want[i][j]))) {
        fprintf(stderr, "reductions: output %u element %u: %g, want %g\n", (unsigned)i,
                (unsigned)j, out[i][j], want[i][j]);
        ++failures;
      }
  /* Errors: the right code, a message naming the op and the shape, the graph unchanged. */
  OK(kfuse_graph_add_input(g, "w2", KFUSE_F32, ws2, 1, &w2));
  OK(kfuse_graph_print(g, &text));
  memset(before, 0, sizeof before);
  strncpy(before, text ? text : "", sizeof before - 1);
  expect_error("reduce: not a reduction",
               kfuse_graph_add_reduction(g, "add", xv, last, 1, 0, &junk),
               KFUSE_ERROR_INVALID_ARGUMENT, "'add' is not a reduction", NULL);
  expect_error("reduce: unknown op", kfuse_graph_add_reduction(g, "summ", xv, last, 1, 0, &junk),
               KFUSE_ERROR_UNKNOWN_OP, "summ", NULL);
  expect_error("reduce: axis", kfuse_graph_add_reduction(g, "mean", xv, bad, 1, 0, &junk),
               KFUSE_ERROR_TYPE, "mean: axis 2 is out of range", "f32[2, 3]");
  expect_error("reduce: no axes", kfuse_graph_add_reduction(g, "sum", xv, NULL, 0, 0, &junk),
               KFUSE_ERROR_TYPE, "axes=[]", NULL);
  expect_error("reduce: axes NULL", kfuse_graph_add_reduction(g, "sum", xv, NULL, 1, 0, &junk),
               KFUSE_ERROR_INVALID_ARGUMENT, "axes is NULL", NULL);
  expect_error("rms_norm: w", kfuse_graph_add_rms_norm(g, xv, w2, 1e-6, &junk), KFUSE_ERROR_TYPE,
               "rms_norm: w f32[2] must be [3]", "x f32[2, 3]");
  expect_error("layer_norm: eps", kfuse_graph_add_layer_norm(g, xv, NULL, NULL, -1, &junk),
               KFUSE_ERROR_INVALID_ARGUMENT, "layer_norm: eps", NULL);
  expect_error("softmax: axis", kfuse_graph_add_softmax(g, xv, 2, &junk), KFUSE_ERROR_TYPE,
               "softmax: axis 2", NULL);
  expect_error("var_mean: twice", kfuse_graph_add_var_mean(g, xv, twice, 2, 1, 0, &junk, &junk),
               KFUSE_ERROR_TYPE, "var_mean: axis", "twice");
  OK(kfuse_graph_print(g, &text));
  CHECK(text && strcmp(text, before) == 0);
  OK(kfuse_graph_destroy(g));
}

static void test_device_absent_or_present(kfuse_graph g) {
  /* Without a GPU every GPU call says so with its own code; with one, this passes too. */
  const char *name = NULL;
  kfuse_status s = kfuse_device_get(&name, NULL, NULL, NULL);
  kfuse_compile_options o;
  kfuse_module m = NULL;
  kfuse_executable e = NULL;
  if (s == KFUSE_OK) {
    CHECK(name && name[0]);
    return;
  }
  expect_error("device", s, KFUSE_ERROR_NO_DEVICE, "kfuse_device_get", NULL);
  OK(kfuse_compile_options_init(&o));
  o.arch = "device";
  expect_error("arch device", kfuse_compile(g, &o, &m), KFUSE_ERROR_NO_DEVICE, NULL, NULL);
  OK(kfuse_compile_options_init(&o));
  o.stage = KFUSE_STAGE_SOURCE;
  OK(kfuse_compile(g, &o, &m));
  expect_error("executable", kfuse_executable_create(m, &e), KFUSE_ERROR_NO_DEVICE,
               "kfuse_executable_create", NULL);
  CHECK(e == NULL);
  OK(kfuse_module_destroy(m));
  expect_error("launch null", kfuse_executable_launch(NULL, NULL, 0, NULL, 0, NULL),
               KFUSE_ERROR_INVALID_ARGUMENT, "executable", "NULL");
}

int main(void) {
  int major = -1, minor = -1, patch = -1;
  kfuse_graph g;
  OK(kfuse_get_version(&major, &minor, &patch));
  CHECK(major == KFUSE_VERSION_MAJOR && minor == KFUSE_VERSION_MINOR &&
        patch == KFUSE_VERSION_PATCH);
  CHECK(strlen(kfuse_version_string()) >= 5);
  CHECK(strcmp(kfuse_last_error(), "") == 0);
  g = build_mlp();
  if (!g) {
    fprintf(stderr, "capi_test: cannot build the graph\n");
    return 1;
  }
  test_build_and_inspect(g);
  test_compile(g);
  test_run_cpu(g);
  {
    kfuse_graph e = build_mlp(); /* the error cases add a few ops of their own */
    test_errors(e);
    OK(kfuse_graph_destroy(e));
  }
  test_parse();
  test_reductions();
  test_device_absent_or_present(g);
  OK(kfuse_graph_destroy(g));
  if (failures) {
    fprintf(stderr, "capi_test: %d check(s) failed\n", failures);
    return 1;
  }
  printf("capi_test: all checks passed\n");
  return 0;
}
