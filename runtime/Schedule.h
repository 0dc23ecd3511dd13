#pragma once
/// The order the kernels of a program must keep, as the edges of its CUDA graph: kernel j
/// waits for an earlier kernel k only when k writes memory that j reads or writes (a data
/// dependency, or an arena slot reused), or k reads memory that j overwrites (a reused
/// slot). Kernels with neither run side by side, as the seed's diagram has K2 and K3.
#include "codegen/KernelSpec.h"
#include "runtime/MemoryPlan.h"

#include <vector>

namespace kfuse::runtime {

/// deps[j]: the kernels (indices < j, ascending) that kernel j must wait for directly; an
/// order already implied through other kernels is left out (transitive reduction). Kernels
/// that do no work (no elements) are given no edges and need none.
std::vector<std::vector<unsigned>> kernelDependencies(const std::vector<codegen::KernelSpec> &specs,
                                                      const MemoryPlan &plan);

} // namespace kfuse::runtime
