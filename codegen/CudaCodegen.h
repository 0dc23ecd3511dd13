#pragma once
/// CUDA C for fused elementwise kernels. One program holds every kernel of a graph (one
/// NVRTC compile; emitKernelSource gives one kernel alone), each an `extern "C" __global__`
/// function named KernelSpec::mangled with parameters (inputs in spec order, then outputs).
/// Math is f32; f16/bf16 are loaded and widened, and rounded to nearest even only on store or
/// cast. NaN semantics follow PyTorch. The element count is a compile-time constant of each
/// kernel.
#include "codegen/KernelSpec.h"

#include <string>
#include <vector>

namespace kfuse::codegen {

/// Threads per block every generated kernel is written for (__launch_bounds__).
inline constexpr unsigned kDefaultBlock = 256;

/// Vector steps each thread keeps in flight per grid-stride iteration (their loads issued
/// together). Measured on the H200 (bench/results/elementwise.md, 2026-12-02): 2 steps
/// were never faster than 1 (x*2*3: 2.046 vs 2.028 ms; gelu_tanh: 285.8 vs 285.5 us, and
/// 331 vs 301.5 us once gelu_tanh kept its exact zero), so 1; 2 stays an option to measure.
inline constexpr unsigned kDefaultUnroll = 1;

struct CodegenOptions {
  unsigned block = kDefaultBlock; ///< the __launch_bounds__ each kernel declares
  unsigned unroll = kDefaultUnroll;
};

/// The whole program: a first line, the device helpers its kernels use (codegen/cuda/*.cuh,
/// only those: a program of `mul` carries no kf_gelu), then each kernel.
std::string emitProgram(const std::vector<KernelSpec> &specs, const CodegenOptions &options = {});
/// Kernel `k` alone as a translation unit of its own, with only the helpers it uses: the
/// program of that one kernel, for compiling each kernel as its own NVRTC program. Its kernel
/// code is byte-identical to k's part of emitProgram with the same options.
std::string emitKernelSource(const KernelSpec &k, const CodegenOptions &options = {});

class Emitter;

/// The per-element __device__ function `<mangled>_elem` of kernel `k` (for a GEMM kernel:
/// its epilogue, taking the accumulator). Shared by the elementwise and GEMM codegen so
/// that every op is emitted in one place.
void emitElementFunction(Emitter &e, const KernelSpec &k);
/// `const T *__restrict__ in0, ..., T *__restrict__ out0, ...` and `in0, ..., out0, ...`.
std::string kernelPointerParams(const KernelSpec &k);
std::string kernelPointerArgs(const KernelSpec &k);

} // namespace kfuse::codegen
