#pragma once
/// CUDA C for the Hopper GEMM (GemmKernel::Wgmma, sm_90a): the device template kf_gemm_wg
/// (a TMA producer warpgroup feeding two wgmma consumer warpgroups through an mbarrier
/// ring of shared-memory stages) and the wgmma wrappers for the tile widths a program uses.
/// emitGemmKernel instantiates it like the other GEMM templates, with the epilogue functor.
#include <string>
#include <vector>

namespace kfuse::codegen {

/// The Hopper templates, with one wgmma m64nNk16 wrapper per N in `widths` (the programs'
/// GemmSpec::bn values). Needs the GEMM prelude (kf_saddr) before it.
std::string wgmmaPrelude(const std::vector<unsigned> &widths);

} // namespace kfuse::codegen
