#include "runtime/Program.h"

#include "ir/Compare.h"
#include "ir/ErrorBound.h"
#include "ir/Error.h"
#include "ir/Interpreter.h"
#include "runtime/DeviceTensor.h"

#include <chrono>
#include <cmath>

namespace kfuse::runtime {

static compiler::CacheStats minus(const compiler::CacheStats &a, const compiler::CacheStats &b) {
  return {a.memoryHits - b.memoryHits, a.diskHits - b.diskHits, a.compiles - b.compiles,
          a.corrupt - b.corrupt};
}

Program::Program(const Graph &g, const ProgramOptions &o) {
  Driver &d = Driver::require();
  compiler::CompileOptions co = deviceOptions(d, o.compile);
  co.planning = o.fuse ? compiler::Planning::Fused : compiler::Planning::Unfused;
  if (o.autotune) {
    // The target by value: the tuner runs inside compile() below, after this block's
    // locals are gone (a reference to one here let it read a dead Target, so the tuner
    // saw no GEMM with two candidates on some builds and tuned nothing).
    co.tuner = [&d, t = co.target, this](const std::vector<codegen::KernelSpec> &kernels) {
      return autotuneGemms(d, kernels, t, &autotuned_);
    };
  }
  compiler::CacheStats before = compiler::cacheStatsSnapshot();
  auto t0 = std::chrono::steady_clock::now();
  module_ = compiler::compile(g, co);
  exe_ = std::make_unique<Executable>(d, module_);
  compileLoadMs_ =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  cacheUse_ = minus(compiler::cacheStatsSnapshot(), before);
  for (const codegen::KernelSpec &k : exe_->specs())
    for (const codegen::SpecOutput &out : k.outputs)
      stored_.push_back(out.tensor.nodeId);
}

Program::~Program() = default;

namespace {
/// The device buffers of one run: inputs uploaded, outputs allocated and poisoned.
struct Buffers {
  std::vector<DeviceBuffer> in, out;
  std::vector<CUdeviceptr> inPtr, outPtr;
  Buffers(const Graph &g, const std::vector<Tensor> &inputs) {
    if (inputs.size() != g.inputs().size())
      fail("graph '{}' has {} inputs, but {} tensors were given", g.name(), g.inputs().size(),
           inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!(inputs[i].type == g.inputs()[i]->type()))
        fail("input {} ('{}') of graph '{}' is {}, but the tensor given is {}", i,
             g.inputs()[i]->name(), g.name(), g.inputs()[i]->type().str(), inputs[i].type.str());
      in.push_back(upload(inputs[i]));
      inPtr.push_back(in.back().ptr());
    }
    for (const Node *n : g.outputs()) {
      out.emplace_back(static_cast<size_t>(n->type().bytes()));
      out.back().poison();
      outPtr.push_back(out.back().ptr());
    }
  }
};
} // namespace

std::vector<Tensor> Program::run(const std::vector<Tensor> &inputs, bool useGraph) {
  Driver &d = Driver::require();
  Buffers b(plan(), inputs);
  if (useGraph && exe_->canCaptureGraph()) {
    exe_->captureGraph(b.inPtr, b.outPtr);
    exe_->replay(nullptr);
  } else {
    exe_->launch(b.inPtr, b.outPtr, nullptr);
  }
  d.check(d.cuCtxSynchronize(), "running the kernels");
  std::vector<Tensor> outputs;
  for (size_t j = 0; j < plan().outputs().size(); ++j)
    outputs.push_back(download(plan().outputs()[j]->type(), b.outPtr[j]));
  return outputs;
}

std::vector<Tensor> Program::reference(const std::vector<Tensor> &inputs) const {
  return interpret(plan(), inputs, stored_);
}

std::string Program::check(const std::vector<Tensor> &inputs,
                           const std::vector<Tensor> &outputs) const {
  // The reference rounds what the kernels store, but its float64 math can land on the
  // other side of a rounding than the kernels' f32 math: an output computed from a stored
  // f16/bf16 value (z = cast(y, f32) of a stored bf16 y) is as close as that dtype allows.
  // A matmul on TF32 tensor cores rounded its inputs to f16's 10-bit mantissa. Dot products
  // are bounded by the magnitudes they summed (ir/ErrorBound.h).
  DType loosest = DType::F32;
  for (const codegen::KernelSpec &k : exe_->specs()) {
    if (k.gemm() && k.gemm()->tf32())
      loosest = coarserDType(loosest, DType::F16);
    for (const codegen::SpecOutput &o : k.outputs)
      loosest = coarserDType(loosest, o.tensor.type.dtype);
  }
  return checkOutputs(plan(), inputs, outputs, stored_, loosest);
}

ProgramTiming Program::bench(const std::vector<Tensor> &inputs, const Target &predictOn,
                             const TimingOptions &o) {
  Buffers b(plan(), inputs);
  return benchmark(*exe_, b.inPtr, b.outPtr, predictOn, o);
}

} // namespace kfuse::runtime
