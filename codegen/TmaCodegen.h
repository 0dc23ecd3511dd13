#pragma once
/// The device helpers of the bulk tensor copy engine (TMA, sm_90): the tensor map passed by
/// value, mbarrier init / expect-bytes / arrive / wait (in this CTA or across its cluster),
/// thread-block cluster rank / barrier / addresses, and a 3D box copy into shared memory
/// (one CTA's, or multicast to several of a cluster) that completes on an mbarrier. Shared
/// by the Hopper GEMM and the decode kernel; emitted once, before either.
namespace kfuse::codegen {

const char *tmaPrelude();

} // namespace kfuse::codegen
