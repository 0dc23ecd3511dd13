#pragma once
/// The wgmma wrappers of the Hopper GEMM (GemmKernel::Wgmma, sm_90a) for the tile widths a
/// program uses. The device template kf_gemm_wg that calls them (a TMA producer warpgroup
/// feeding wgmma consumer warpgroups through an mbarrier ring of shared-memory stages) is
/// codegen/cuda/gemm_wgmma.cuh; emitGemmKernel instantiates it like the other GEMM
/// templates, with the epilogue functor.
#include <string>
#include <vector>

namespace kfuse::codegen {

/// One wgmma m64nNk16 wrapper (a kf_wgmma<N> specialisation) per N in `widths` (the
/// program's GemmSpec::bn values): generated, since each width has its own asm operand list.
/// Goes after codegen/cuda/wgmma.cuh, which declares kf_wgmma.
std::string wgmmaWrappers(const std::vector<unsigned> &widths);

} // namespace kfuse::codegen
