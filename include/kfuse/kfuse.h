/*
 * kfuse.h: the C API of kfuse (libkfuse.so), for C, C++ and anything that can call C
 * (Python ctypes/cffi, Rust, Go, ...). Documented in docs/c-api.md.
 *
 * Build a graph (or parse .kf text), compile it (fusion, CUDA C, NVRTC), read what the
 * compiler did as JSON and CUDA C, run it on the CPU reference interpreter with host buffers,
 * or on the GPU on the caller's device pointers and stream.
 *
 *   kfuse_graph g;
 *   kfuse_value x, w, y;
 *   int64_t xs[] = {64, 4096}, ws[] = {11008, 4096};
 *   kfuse_graph_create("mlp", &g);
 *   kfuse_graph_add_input(g, "x", KFUSE_BF16, xs, 2, &x);
 *   kfuse_graph_add_input(g, "w", KFUSE_BF16, ws, 2, &w);
 *   kfuse_value mm[] = {x, w};
 *   if (kfuse_graph_add_op(g, "matmul", mm, 2, "trans_b=true", &y) != KFUSE_OK)
 *     fprintf(stderr, "%s\n", kfuse_last_error());
 *
 * Rules that hold for every function:
 *  - Handles are opaque pointers; a NULL handle or output pointer is KFUSE_ERROR_INVALID_ARGUMENT.
 *  - Every function but kfuse_last_error, kfuse_status_name and kfuse_version_string returns
 *    a kfuse_status; on failure kfuse_last_error() says why (one message per thread, kept
 *    until the next failure on that thread) and the output arguments are left as they were.
 *  - No C++ exception leaves the library; it does not abort or print.
 *  - Strings returned through `const char **` belong to the handle they came from and stay
 *    valid until that handle is destroyed (or, where noted, until the same call is made again).
 *  - A graph, graph set or module may be read from several threads at once; changing a graph
 *    (adding inputs, ops, outputs, names; printing it) and launching an executable need one
 *    thread at a time per handle.
 *  - ABI: handles are opaque, enums have fixed values, kfuse_compile_options carries its own
 *    size. New functions, enum values and option fields are only ever appended.
 */
#ifndef KFUSE_KFUSE_H
#define KFUSE_KFUSE_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define KFUSE_API
#elif defined(__GNUC__)
#define KFUSE_API __attribute__((visibility("default")))
#else
#define KFUSE_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header; kfuse_version_string() is the library's. */
#define KFUSE_VERSION_MAJOR 0
#define KFUSE_VERSION_MINOR 1
#define KFUSE_VERSION_PATCH 0

/* ---------------------------------------------------------------------------------------- */
/* Status codes and errors                                                                  */

typedef enum kfuse_status {
  KFUSE_OK = 0,
  KFUSE_ERROR_INVALID_ARGUMENT = 1, /* NULL pointer, bad enum value, a value of another graph,
                                       index out of range, wrong number of buffers */
  KFUSE_ERROR_UNKNOWN_OP = 2,       /* an op name that ir/Ops.def does not declare */
  KFUSE_ERROR_BAD_OPERANDS = 3,     /* wrong operand count, a literal where a tensor is needed */
  KFUSE_ERROR_BAD_ATTRIBUTE = 4,    /* attribute text that does not parse, an attribute the op
                                       does not take, a required one missing */
  KFUSE_ERROR_TYPE = 5,             /* shapes or dtypes that do not fit the op */
  KFUSE_ERROR_PARSE = 6,            /* .kf text with an error (FILE:LINE:COL in the message) */
  KFUSE_ERROR_INVALID_GRAPH = 7,    /* the verifier refused the graph (e.g. no outputs) */
  KFUSE_ERROR_NOT_FOUND = 8,        /* no graph or value of that name */
  KFUSE_ERROR_COMPILE = 9,          /* codegen or NVRTC failed */
  KFUSE_ERROR_NO_DEVICE = 10,       /* no CUDA driver or no GPU: the GPU functions cannot run */
  KFUSE_ERROR_DEVICE = 11,          /* a CUDA driver call failed */
  KFUSE_ERROR_IO = 12,              /* a file could not be read or written */
  KFUSE_ERROR_RUN = 13,             /* the interpreter refused (e.g. a tensor too large) */
  KFUSE_ERROR_OUT_OF_MEMORY = 14,
  KFUSE_ERROR_INTERNAL = 15,        /* a bug in kfuse: please report it with the message */
  /* Not statuses: these keep every kfuse enum a 32-bit int in C and C++, so that any int
   * value passed in is well-defined (and refused) rather than out of the enum's range. */
  KFUSE_STATUS_ENUM_MIN_ = -0x7fffffff - 1,
  KFUSE_STATUS_ENUM_MAX_ = 0x7fffffff
} kfuse_status;

/* The message of the last call on this thread that failed ("" if none): one sentence naming
 * the function, the op and the shapes or dtypes; a parse error is the whole diagnostic
 * (FILE:LINE:COL: error: ..., the line, a caret). Valid until the next failure on this thread. */
KFUSE_API const char *kfuse_last_error(void);
/* "KFUSE_OK", "KFUSE_ERROR_TYPE", ...; "KFUSE_ERROR_UNKNOWN_STATUS" for other values. */
KFUSE_API const char *kfuse_status_name(kfuse_status s);
/* The library's version, "0.1.0". */
KFUSE_API const char *kfuse_version_string(void);
KFUSE_API kfuse_status kfuse_get_version(int *major, int *minor, int *patch);

/* ---------------------------------------------------------------------------------------- */
/* Graphs                                                                                    */

typedef enum kfuse_dtype {
  KFUSE_F32 = 0,
  KFUSE_F16 = 1,  /* IEEE binary16 */
  KFUSE_BF16 = 2, /* bfloat16 */
  KFUSE_DTYPE_ENUM_MIN_ = -0x7fffffff - 1,
  KFUSE_DTYPE_ENUM_MAX_ = 0x7fffffff
} kfuse_dtype;

typedef struct kfuse_graph_s *kfuse_graph;
/* A value of a graph: an input, an op's result, or a scalar literal. Owned by its graph. */
typedef struct kfuse_value_s *kfuse_value;

KFUSE_API kfuse_status kfuse_graph_create(const char *name, kfuse_graph *out);
/* Frees the graph and its values; NULL is allowed (nothing to do). */
KFUSE_API kfuse_status kfuse_graph_destroy(kfuse_graph g);

/* A named input of `dtype` and shape dims[0..rank) (rank 0: a scalar tensor; dims may then
 * be NULL). Inputs are bound in the order they are added. */
KFUSE_API kfuse_status kfuse_graph_add_input(kfuse_graph g, const char *name, kfuse_dtype dtype,
                                             const int64_t *dims, size_t rank, kfuse_value *out);
/* An op of ir/Ops.def by its .kf name ("add", "gelu_tanh", "matmul", "cast", ...) on
 * operands[0..n), with attributes in .kf syntax: "trans_b=true", "to=bf16",
 * "trans_a=false, trans_b=true" (NULL or "" for none; left-out attributes take their
 * defaults). The result type is inferred; errors name the op and the shapes or dtypes. */
KFUSE_API kfuse_status kfuse_graph_add_op(kfuse_graph g, const char *op,
                                          const kfuse_value *operands, size_t n,
                                          const char *attrs, kfuse_value *out);
/* A scalar literal (held as f32, taking the other operand's dtype): an operand of a binary
 * op only, as `add %x, 1.5` in .kf text. */
KFUSE_API kfuse_status kfuse_graph_literal(kfuse_graph g, double v, kfuse_value *out);
/* Appends a graph output (the same value may be an output twice). */
KFUSE_API kfuse_status kfuse_graph_add_output(kfuse_graph g, kfuse_value v);
/* Checks the whole graph (KFUSE_ERROR_INVALID_GRAPH, e.g. when it has no outputs). */
KFUSE_API kfuse_status kfuse_graph_verify(kfuse_graph g);
/* The graph as .kf text; valid until the next kfuse_graph_print of `g` or its destruction. */
KFUSE_API kfuse_status kfuse_graph_print(kfuse_graph g, const char **text);

KFUSE_API kfuse_status kfuse_graph_name(kfuse_graph g, const char **name);
KFUSE_API kfuse_status kfuse_graph_num_inputs(kfuse_graph g, size_t *n);
KFUSE_API kfuse_status kfuse_graph_num_outputs(kfuse_graph g, size_t *n);
KFUSE_API kfuse_status kfuse_graph_input(kfuse_graph g, size_t i, kfuse_value *out);
KFUSE_API kfuse_status kfuse_graph_output(kfuse_graph g, size_t i, kfuse_value *out);
/* The value named `name` (an input, or an op given a name; "%" not included). */
KFUSE_API kfuse_status kfuse_graph_find(kfuse_graph g, const char *name, kfuse_value *out);

/* Names a value (shown as %name in printed text and in kernels' comments). */
KFUSE_API kfuse_status kfuse_value_set_name(kfuse_graph g, kfuse_value v, const char *name);
/* The value's name, "" when it has none. */
KFUSE_API kfuse_status kfuse_value_name(kfuse_graph g, kfuse_value v, const char **name);
KFUSE_API kfuse_status kfuse_value_dtype(kfuse_graph g, kfuse_value v, kfuse_dtype *dtype);
/* Sets *rank; writes the dims to dims[0..rank) when dims is not NULL and capacity >= rank
 * (else KFUSE_ERROR_INVALID_ARGUMENT). Call with dims NULL to learn the rank. */
KFUSE_API kfuse_status kfuse_value_shape(kfuse_graph g, kfuse_value v, int64_t *dims,
                                         size_t capacity, size_t *rank);
/* Elements times the dtype's size: the bytes of its buffer. */
KFUSE_API kfuse_status kfuse_value_bytes(kfuse_graph g, kfuse_value v, size_t *bytes);

/* ---------------------------------------------------------------------------------------- */
/* .kf text                                                                                  */

/* The graphs of one .kf text or file. */
typedef struct kfuse_graph_set_s *kfuse_graph_set;

/* `filename` names the text in error messages (NULL: "<string>"). */
KFUSE_API kfuse_status kfuse_parse_string(const char *text, const char *filename,
                                          kfuse_graph_set *out);
KFUSE_API kfuse_status kfuse_parse_file(const char *path, kfuse_graph_set *out);
KFUSE_API kfuse_status kfuse_graph_set_destroy(kfuse_graph_set s);
KFUSE_API kfuse_status kfuse_graph_set_count(kfuse_graph_set s, size_t *n);
KFUSE_API kfuse_status kfuse_graph_set_name(kfuse_graph_set s, size_t i, const char **name);
/* A new graph (destroy it with kfuse_graph_destroy): a copy of the one named `name`, or of
 * the only one when `name` is NULL. */
KFUSE_API kfuse_status kfuse_graph_set_get(kfuse_graph_set s, const char *name, kfuse_graph *out);

/* ---------------------------------------------------------------------------------------- */
/* Compiling                                                                                 */

typedef enum kfuse_stage {
  KFUSE_STAGE_PLAN = 0,   /* the planned graph and fusion decisions only */
  KFUSE_STAGE_SOURCE = 1, /* and each kernel's CUDA C, launch and expected time (no NVRTC) */
  KFUSE_STAGE_CUBIN = 2,  /* and each kernel compiled by NVRTC (needs no GPU) */
  KFUSE_STAGE_ENUM_MIN_ = -0x7fffffff - 1,
  KFUSE_STAGE_ENUM_MAX_ = 0x7fffffff
} kfuse_stage;

typedef struct kfuse_compile_options {
  size_t struct_size; /* sizeof(kfuse_compile_options): set by kfuse_compile_options_init */
  const char *arch;   /* NULL: the device model's own (sm_90a on h200); "sm_80", "sm_90",
                         "sm_90a", ...; "device": the GPU's (KFUSE_ERROR_NO_DEVICE without) */
  const char *device; /* the device model of expected times: NULL "h200"; "h100", "a100",
                         or "NAME:BW_TBps:TFLOPs[:FIXED_us]" */
  int tf32;           /* 0: exact f32 matmuls; 1: f32 matmuls on TF32 tensor cores */
  int fusion;         /* 1: the -O2 pipeline (simplify, cse, dce, fuse); 0: every op its
                         own kernel */
  unsigned jobs;      /* NVRTC threads; 0: one per hardware thread */
  kfuse_stage stage;  /* how far to go: KFUSE_STAGE_CUBIN */
  const char *dump_dir; /* NULL: no dump (unless KFUSE_DUMP is set); else every stage is
                           written under DUMP_DIR/GRAPH (docs/dumps.md) */
} kfuse_compile_options;

/* The defaults above. */
KFUSE_API kfuse_status kfuse_compile_options_init(kfuse_compile_options *o);

typedef struct kfuse_module_s *kfuse_module;

/* Verifies and compiles `g` (which is not changed; the module keeps its own copy). `o` NULL:
 * the defaults. */
KFUSE_API kfuse_status kfuse_compile(kfuse_graph g, const kfuse_compile_options *o,
                                     kfuse_module *out);
KFUSE_API kfuse_status kfuse_module_destroy(kfuse_module m);
/* NVRTC's --gpu-architecture, "sm_90a". */
KFUSE_API kfuse_status kfuse_module_arch(kfuse_module m, const char **arch);
KFUSE_API kfuse_status kfuse_module_num_kernels(kfuse_module m, size_t *n);
/* Kernel i (launch order): its name ("k0") and its CUDA C (a standalone translation unit;
 * "" before KFUSE_STAGE_SOURCE). */
KFUSE_API kfuse_status kfuse_module_kernel_name(kfuse_module m, size_t i, const char **name);
KFUSE_API kfuse_status kfuse_module_kernel_source(kfuse_module m, size_t i, const char **source);
/* The planned graph as .kf text, kernel regions included. */
KFUSE_API kfuse_status kfuse_module_plan(kfuse_module m, const char **text);
/* Expected time of the whole module on the device model, in seconds. */
KFUSE_API kfuse_status kfuse_module_expected_seconds(kfuse_module m, double *seconds);
/* JSON texts (docs/c-api.md describes them): the traffic report of `kfuse report --json`
 * (unfused against fused plan, fusion decisions), the fusion decisions alone, and the kernel
 * list of the dumps' kernels.json (launch, registers, expected time per kernel). */
KFUSE_API kfuse_status kfuse_module_report_json(kfuse_module m, const char **json);
KFUSE_API kfuse_status kfuse_module_fusion_json(kfuse_module m, const char **json);
KFUSE_API kfuse_status kfuse_module_kernels_json(kfuse_module m, const char **json);

/* ---------------------------------------------------------------------------------------- */
/* Running on the CPU: the reference interpreter                                             */

/* Evaluates `g` in float64 (docs/language.md says where it rounds). Buffers are host memory
 * in each tensor's dtype, row-major: f32 as float, f16 and bf16 as their 16-bit patterns;
 * inputs[0..n_inputs) in input order, outputs[0..n_outputs) in output order, each of
 * kfuse_value_bytes bytes. */
KFUSE_API kfuse_status kfuse_run_cpu(kfuse_graph g, const void *const *inputs, size_t n_inputs,
                                     void *const *outputs, size_t n_outputs);
/* float <-> a dtype's storage (round to nearest even), n elements. */
KFUSE_API kfuse_status kfuse_encode(kfuse_dtype dtype, const float *src, size_t n, void *dst);
KFUSE_API kfuse_status kfuse_decode(kfuse_dtype dtype, const void *src, size_t n, float *dst);
KFUSE_API kfuse_status kfuse_dtype_size(kfuse_dtype dtype, size_t *bytes);

/* ---------------------------------------------------------------------------------------- */
/* Running on the GPU                                                                        */

/* Device 0 as kfuse uses it (its primary context, the CUDA runtime's). Any output may be
 * NULL. KFUSE_ERROR_NO_DEVICE, with the reason, when there is no driver or no device. */
KFUSE_API kfuse_status kfuse_device_get(const char **name, int *cc_major, int *cc_minor,
                                        int *sm_count);

typedef struct kfuse_executable_s *kfuse_executable;

/* Loads a module compiled to KFUSE_STAGE_CUBIN for this GPU (arch "device") on device 0, and
 * allocates its intermediates. The module may be destroyed afterwards. */
KFUSE_API kfuse_status kfuse_executable_create(kfuse_module m, kfuse_executable *out);
KFUSE_API kfuse_status kfuse_executable_destroy(kfuse_executable e);
/* Launches every kernel on `stream` (a CUstream or cudaStream_t; NULL: the default stream)
 * and returns without waiting. Buffers are the caller's device pointers in each tensor's
 * dtype: inputs in graph input order, outputs in graph output order. */
KFUSE_API kfuse_status kfuse_executable_launch(kfuse_executable e, const void *const *inputs,
                                               size_t n_inputs, void *const *outputs,
                                               size_t n_outputs, void *stream);
/* The same as one CUDA graph: recorded on the first call, its kernels pointed at other
 * buffers when they change, replayed on `stream`. Falls back to kfuse_executable_launch for
 * a program that cannot be one CUDA graph (an output that is an input or the same value as
 * another output). */
KFUSE_API kfuse_status kfuse_executable_replay(kfuse_executable e, const void *const *inputs,
                                               size_t n_inputs, void *const *outputs,
                                               size_t n_outputs, void *stream);

/* ---------------------------------------------------------------------------------------- */
/* Reductions and composites                                                                 */

/* A reduction of ir/Ops.def by its .kf name ("sum", "mean", "amax", "amin") of `x` over
 * axes[0..n_axes) (negative axes count from the end; at least one; each dim at most once),
 * keeping the reduced dims with size 1 when `keepdims` is nonzero: the same node as
 * kfuse_graph_add_op(g, "sum", &x, 1, "axes=[-1], keepdims=true", out). The result has x's
 * dtype. KFUSE_ERROR_UNKNOWN_OP for a name that is not an op, KFUSE_ERROR_INVALID_ARGUMENT
 * for an op that is not a reduction or axes NULL with n_axes > 0, KFUSE_ERROR_TYPE for axes
 * that do not fit x (out of range, named twice, none, amax/amin over an empty dim). */
KFUSE_API kfuse_status kfuse_graph_add_reduction(kfuse_graph g, const char *op, kfuse_value x,
                                                 const int64_t *axes, size_t n_axes,
                                                 int keepdims, kfuse_value *out);
/* The composites of ir/Composites.h (docs/api.md), expanded into the graph's ops as PyTorch
 * and Hugging Face spell them; `out` is the final value. Shapes and dtypes that do not fit
 * are KFUSE_ERROR_TYPE with a message naming the function and the shapes; an eps that is
 * negative, not finite or beyond f32 is KFUSE_ERROR_INVALID_ARGUMENT. A refused call adds
 * nothing to the graph.
 *  - softmax / log_softmax of x over `axis` (torch.softmax, torch.log_softmax);
 *  - rms_norm: Hugging Face's LlamaRMSNorm over the last axis; `w` (shape [N], x's dtype)
 *    may be NULL for no weight;
 *  - layer_norm: torch.nn.functional.layer_norm over the last axis; `w` and `b` may be
 *    NULL (no scale, no shift);
 *  - var_mean: torch.var_mean over axes[0..n_axes) with `correction` (1: unbiased). */
KFUSE_API kfuse_status kfuse_graph_add_softmax(kfuse_graph g, kfuse_value x, int64_t axis,
                                               kfuse_value *out);
KFUSE_API kfuse_status kfuse_graph_add_log_softmax(kfuse_graph g, kfuse_value x, int64_t axis,
                                                   kfuse_value *out);
KFUSE_API kfuse_status kfuse_graph_add_rms_norm(kfuse_graph g, kfuse_value x, kfuse_value w,
                                                double eps, kfuse_value *out);
KFUSE_API kfuse_status kfuse_graph_add_layer_norm(kfuse_graph g, kfuse_value x, kfuse_value w,
                                                  kfuse_value b, double eps, kfuse_value *out);
KFUSE_API kfuse_status kfuse_graph_add_var_mean(kfuse_graph g, kfuse_value x,
                                                const int64_t *axes, size_t n_axes,
                                                double correction, int keepdims,
                                                kfuse_value *var, kfuse_value *mean);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KFUSE_KFUSE_H */
