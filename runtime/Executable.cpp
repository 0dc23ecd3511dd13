#include "runtime/Executable.h"

#include "codegen/KernelEmitter.h"
#include "ir/Error.h"
#include "runtime/Schedule.h"
#include "runtime/TensorMap.h"

#include <algorithm>
#include <map>
#include <utility>

namespace kfuse::runtime {

using namespace codegen;

Target deviceTarget(const Driver &d, Target target) {
  target.sm = static_cast<unsigned>(d.ccMajor * 10 + d.ccMinor);
  target.smCount = static_cast<unsigned>(std::max(1, d.smCount));
  target.clusterPairs = static_cast<unsigned>(std::max(0, d.clusterPairs));
  return target;
}

compiler::CompileOptions deviceOptions(const Driver &d, compiler::CompileOptions o) {
  o.target = deviceTarget(d, std::move(o.target));
  return o;
}

compiler::CompiledModule compileAsGiven(const Driver &d, const Graph &plan,
                                        compiler::CompileOptions o) {
  o.planning = compiler::Planning::AsGiven;
  return compiler::compile(plan, deviceOptions(d, std::move(o)));
}

/// The blocks of `f` the device holds at once when launched as `c` (whole clusters), from the
/// driver's occupancy of its registers and shared memory; 0 when the driver cannot say.
static uint64_t residentBlocks(const Driver &d, CUfunction f, const LaunchConfig &c) {
  int n = 0;
  if (c.cluster <= 1) {
    if (d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, static_cast<int>(c.block),
                                                      c.sharedBytes) != CUDA_SUCCESS)
      return 0;
    return uint64_t(std::max(0, n)) * uint64_t(std::max(0, d.smCount));
  }
  // Clusters are placed within one GPC each: fewer fit than SMs * blocks / cluster.
  CUlaunchConfig lc{};
  lc.gridDimX = static_cast<unsigned>(c.grid);
  lc.gridDimY = c.gridY;
  lc.gridDimZ = c.gridZ;
  lc.blockDimX = c.block;
  lc.blockDimY = c.blockY;
  lc.blockDimZ = c.blockZ;
  lc.sharedMemBytes = c.sharedBytes;
  if (d.cuOccupancyMaxActiveClusters(&n, f, &lc) != CUDA_SUCCESS)
    return 0;
  return uint64_t(std::max(0, n)) * c.cluster;
}

Executable::Executable(Driver &d, const compiler::CompiledModule &m)
    : d_(d), inputIds_(m.inputIds), outputIds_(m.outputIds), copySource_(m.outputCopyOf),
      outputBytes_(m.outputBytes) {
  for (const compiler::CompiledKernel &k : m.kernels) {
    if (k.cubin.empty())
      fail("kernel '{}' has no cubin: the module was compiled only until its source", k.spec.name);
    specs_.push_back(k.spec);
    configs_.push_back(k.launch);
  }
  for (const KernelSpec &s : specs_) // after specs_ is whole: tensor-map params point into it
    params_.push_back(emitterFor(s).params(s));
  std::vector<unsigned> external = inputIds_;
  external.insert(external.end(), outputIds_.begin(), outputIds_.end());
  plan_ = planMemory(specs_, external);
  try { // a constructor that throws runs no destructor: give back what is held so far
    std::vector<unsigned> raised(m.kernels.size(), 48 * 1024); // shared memory allowed
    for (const compiler::CompiledKernel &k : m.kernels) {
      // A kernel whose code is an earlier one's (compiled once) calls that one's function.
      size_t owner = k.sameCodeAs >= 0 ? static_cast<size_t>(k.sameCodeAs) : functions_.size();
      CUfunction f;
      if (k.sameCodeAs >= 0) {
        f = functions_.at(static_cast<size_t>(k.sameCodeAs));
      } else {
        CUmodule mod = nullptr;
        d.check(d.cuModuleLoadData(&mod, k.cubin.data()),
                "loading the compiled kernels (cuModuleLoadData)");
        modules_.push_back(mod);
        d.check(d.cuModuleGetFunction(&f, mod, k.entry.c_str()), "cuModuleGetFunction");
      }
      // Dynamic shared memory above the default 48 KB must be opted into per function (the
      // most any kernel launching it asks for).
      if (unsigned smem = k.launch.sharedBytes; smem > raised[owner]) {
        d.check(d.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     static_cast<int>(smem)),
                "raising a kernel's shared memory limit (cuFuncSetAttribute)");
        raised[owner] = smem;
      }
      functions_.push_back(f);
      // A grid-stride kernel takes one wave: the blocks that fit at once, each looping over
      // an equal share (a second, partial wave would run its share at a fraction of the
      // device's occupancy after the first).
      LaunchConfig &c = configs_[functions_.size() - 1];
      if (c.gridStride) {
        uint64_t wave = residentBlocks(d, f, c);
        if (c.cooperative() && wave < c.syncGroup)
          fail("kernel '{}' splits each row over {} CTAs that wait on each other, but the device "
               "holds {} of them at once",
               k.spec.name, c.syncGroup, wave);
        if (wave >= c.gridMultiple() && wave < c.grid)
          c.grid = wave - wave % c.gridMultiple();
      }
    }
    if (plan_.peakBytes)
      d.check(d.cuMemAlloc_v2(&arena_, plan_.peakBytes), "allocating the intermediate arena");
    workspaces_.assign(specs_.size(), 0);
    for (size_t k = 0; k < specs_.size(); ++k)
      for (const KernelParam &p : params_[k])
        if (p.kind == KernelParam::Workspace && p.workspaceBytes) {
          d.check(d.cuMemAlloc_v2(&workspaces_[k], p.workspaceBytes), "allocating a workspace");
          d.check(d.cuMemsetD8_v2(workspaces_[k], 0, p.workspaceBytes), "zeroing a workspace");
        }
  } catch (...) {
    freeDeviceMemory();
    for (CUmodule mod : modules_)
      d.cuModuleUnload(mod);
    modules_.clear();
    throw;
  }
  args_.resize(specs_.size());
  argPtrs_.resize(specs_.size());
  tensorMaps_.resize(specs_.size());
  for (size_t k = 0; k < specs_.size(); ++k) {
    args_[k].assign(params_[k].size(), 0);
    tensorMaps_[k].assign(params_[k].size(), CUtensorMap{});
  }
}

Executable::~Executable() {
  if (exec_)
    d_.cuGraphExecDestroy(exec_);
  if (graph_)
    d_.cuGraphDestroy(graph_);
  freeDeviceMemory();
  for (CUmodule mod : modules_)
    d_.cuModuleUnload(mod);
}

void Executable::freeDeviceMemory() {
  if (arena_)
    d_.cuMemFree_v2(arena_);
  arena_ = 0;
  for (CUdeviceptr &w : workspaces_)
    if (w)
      d_.cuMemFree_v2(std::exchange(w, 0));
}

void Executable::bind(llvm::ArrayRef<CUdeviceptr> inputs, llvm::ArrayRef<CUdeviceptr> outputs) {
  if (inputs.size() != inputIds_.size() || outputs.size() != outputIds_.size())
    fail("the graph takes {} inputs and {} outputs, got {} and {} buffers", inputIds_.size(),
         outputIds_.size(), inputs.size(), outputs.size());
  std::map<unsigned, CUdeviceptr> where;
  for (size_t i = 0; i < inputs.size(); ++i)
    where[inputIds_[i]] = inputs[i];
  for (size_t j = 0; j < outputs.size(); ++j)
    where.try_emplace(outputIds_[j], outputs[j]);
  for (auto [id, off] : plan_.offsetOf)
    where[id] = arena_ + off;
  for (size_t k = 0; k < specs_.size(); ++k)
    bindKernel(k, where);
}

void Executable::bindKernel(size_t k, const std::map<unsigned, CUdeviceptr> &where) {
  const KernelSpec &s = specs_[k];
  const std::vector<KernelParam> &params = params_[k];
  // Sized once in the constructor: the parameters point into these.
  std::vector<CUdeviceptr> &a = args_[k];
  argPtrs_[k].clear();
  for (size_t i = 0; i < params.size(); ++i) {
    const KernelParam &p = params[i];
    if (p.kind == KernelParam::Workspace) {
      a[i] = workspaces_[k];
      argPtrs_[k].push_back(&a[i]);
      continue;
    }
    const SpecTensor &t = p.output ? s.outputs[p.index].tensor : s.inputs[p.index];
    a[i] = where.at(t.nodeId);
    if (p.aligned16 && a[i] % 16 != 0)
      fail("kernel '{}': {} {} at 0x{:x} is not 16-byte aligned (read with 16-byte loads)", s.name,
           p.output ? "output" : "input", p.index, a[i]);
    if (p.kind == KernelParam::TensorMap) {
      tensorMaps_[k][i] = encodeTensorMap(d_, *p.map, t.type.dtype, a[i],
                                          fmt::format("kernel '{}', input {}", s.name, p.index));
      argPtrs_[k].push_back(&tensorMaps_[k][i]);
    } else {
      argPtrs_[k].push_back(&a[i]);
    }
  }
}

void Executable::launchKernel(unsigned k, CUstream stream) {
  if (specs_[k].numel() == 0)
    return;
  const LaunchConfig &c = configs_[k];
  if (c.cooperative())
    d_.check(d_.cuLaunchCooperativeKernel(functions_[k], static_cast<unsigned>(c.grid), c.gridY,
                                          c.gridZ, c.block, c.blockY, c.blockZ, c.sharedBytes,
                                          stream, argPtrs_[k].data()),
             "cuLaunchCooperativeKernel");
  else
    d_.check(d_.cuLaunchKernel(functions_[k], static_cast<unsigned>(c.grid), c.gridY, c.gridZ,
                               c.block, c.blockY, c.blockZ, c.sharedBytes, stream,
                               argPtrs_[k].data(), nullptr),
             "cuLaunchKernel");
}

void Executable::launch(llvm::ArrayRef<CUdeviceptr> inputs, llvm::ArrayRef<CUdeviceptr> outputs,
                        CUstream stream) {
  bind(inputs, outputs);
  for (unsigned k = 0; k < specs_.size(); ++k)
    launchKernel(k, stream);
  for (size_t j = 0; j < outputs.size(); ++j) {
    int s = copySource_[j];
    if (s == -1 || outputBytes_[j] == 0)
      continue;
    CUdeviceptr src = s >= 0 ? inputs[s] : outputs[-2 - s];
    d_.check(d_.cuMemcpyDtoDAsync_v2(outputs[j], src, outputBytes_[j], stream),
             "copying an output");
  }
}

CUDA_KERNEL_NODE_PARAMS Executable::nodeParams(unsigned k) {
  CUDA_KERNEL_NODE_PARAMS p{};
  p.func = functions_[k];
  const LaunchConfig &c = configs_[k];
  p.gridDimX = static_cast<unsigned>(c.grid);
  p.gridDimY = c.gridY;
  p.gridDimZ = c.gridZ;
  p.blockDimX = c.block;
  p.blockDimY = c.blockY;
  p.blockDimZ = c.blockZ;
  p.sharedMemBytes = c.sharedBytes;
  p.kernelParams = argPtrs_[k].data();
  return p;
}

bool Executable::canCaptureGraph() const {
  return std::all_of(copySource_.begin(), copySource_.end(), [](int s) { return s == -1; });
}

void Executable::captureGraph(llvm::ArrayRef<CUdeviceptr> inputs,
                              llvm::ArrayRef<CUdeviceptr> outputs) {
  if (!canCaptureGraph())
    fail("a graph whose output is an input or a repeated output cannot be captured yet");
  bind(inputs, outputs);
  if (exec_)
    d_.cuGraphExecDestroy(exec_);
  if (graph_)
    d_.cuGraphDestroy(graph_);
  exec_ = nullptr;
  d_.check(d_.cuGraphCreate(&graph_, 0), "cuGraphCreate");
  nodes_.assign(specs_.size(), nullptr);
  std::vector<std::vector<unsigned>> deps = kernelDependencies(specs_, plan_);
  for (unsigned k = 0; k < specs_.size(); ++k) {
    if (specs_[k].numel() == 0)
      continue; // no work, no node; nothing depends on it (it writes nothing)
    std::vector<CUgraphNode> after;
    for (unsigned p : deps[k])
      if (nodes_[p])
        after.push_back(nodes_[p]);
    CUDA_KERNEL_NODE_PARAMS p = nodeParams(k);
    d_.check(d_.cuGraphAddKernelNode_v2(&nodes_[k], graph_, after.data(), after.size(), &p),
             "cuGraphAddKernelNode");
    if (configs_[k].cooperative()) {
      CUkernelNodeAttrValue v{};
      v.cooperative = 1;
      d_.check(d_.cuGraphKernelNodeSetAttribute(nodes_[k], CU_KERNEL_NODE_ATTRIBUTE_COOPERATIVE, &v),
               "making a kernel node cooperative (cuGraphKernelNodeSetAttribute)");
    }
  }
  d_.check(d_.cuGraphInstantiateWithFlags(&exec_, graph_, 0), "cuGraphInstantiate");
}

void Executable::rebindGraph(llvm::ArrayRef<CUdeviceptr> inputs,
                             llvm::ArrayRef<CUdeviceptr> outputs) {
  if (!exec_)
    fail("rebindGraph before captureGraph");
  bind(inputs, outputs);
  for (unsigned k = 0; k < specs_.size(); ++k) {
    if (specs_[k].numel() == 0)
      continue;
    CUDA_KERNEL_NODE_PARAMS p = nodeParams(k);
    d_.check(d_.cuGraphExecKernelNodeSetParams_v2(exec_, nodes_[k], &p),
             "cuGraphExecKernelNodeSetParams");
  }
}

void Executable::replay(CUstream stream) {
  if (!exec_)
    fail("replay before captureGraph");
  d_.check(d_.cuGraphLaunch(exec_, stream), "cuGraphLaunch");
}

} // namespace kfuse::runtime
