#pragma once
/// Helpers of the GPU tests: a float64 host reference (the interpreter's rules: inputs
/// rounded to their dtype, literals as f32, cast rounds, outputs rounded; intermediates
/// exact), device buffers with dtype conversion, poisoning and tolerance checks.
#include "ir/Graph.h"
#include "runtime/DeviceTensor.h"
#include "runtime/Driver.h"
#include "runtime/Executable.h"

#include <string>
#include <vector>

namespace kfuse::gputest {

using HostTensor = std::vector<double>;

/// `stored`: ids of the values the plan stores, rounded to their dtype as the kernels do.
std::vector<HostTensor> reference(const Graph &g, const std::vector<HostTensor> &inputs,
                                  const std::vector<unsigned> &stored = {});
/// Random values in [-2, 2], rounded to `t`; about 1% NaN/+Inf/-Inf when `specials`.
HostTensor randomTensor(const TensorType &t, uint64_t seed, bool specials);

using runtime::DeviceBuffer;

DeviceBuffer upload(const TensorType &t, const HostTensor &v);
HostTensor download(const TensorType &t, const DeviceBuffer &b);
/// Fills with 0xFF bytes: NaN in f32, f16 and bf16, so an unwritten element fails.
inline void poison(DeviceBuffer &b) { b.poison(); }

/// "" when `got` matches `ref` within the dtype's tolerance (ir/Compare.h) times `scale`,
/// plus kErrorMargin times `errorScale` (ir/ErrorBound.h) where one is given.
std::string compare(DType t, const HostTensor &got, const HostTensor &ref, double scale = 1.0,
                    const HostTensor &errorScale = {});

/// Runs `g` on the GPU (plain launches) and checks every output against the reference.
/// Returns "" on success.
std::string runAndCheck(const Graph &g, uint64_t seed, bool specials);

/// Quick mode, for running the suite under compute-sanitizer (tools/gpu_sanitize.sh), which
/// is 10-100x slower: KFUSE_GPU_QUICK set to anything but "" or "0". Read here only, once.
/// Every TEST_CASE still runs and checks the same things, on fewer random graphs and
/// smaller tensors; a case that cannot shrink (2^31 + 7 elements) is skipped with a WARN.
bool quickMode();
/// `full` normally, `quick` in quick mode: the one way a test picks its counts and sizes.
int64_t scaled(int64_t full, int64_t quick);

} // namespace kfuse::gputest
