#include "runtime/TensorMap.h"

#include "ir/Error.h"

namespace kfuse::runtime {

CUtensorMap encodeTensorMap(const Driver &d, const codegen::TmaOperand &t, DType dtype,
                            CUdeviceptr ptr, const std::string &what) {
  // f32 operands are read by TF32 wgmma (which ignores their low 13 mantissa bits).
  CUtensorMap map{};
  cuuint64_t dims[3] = {t.dims[0], t.dims[1], t.dims[2]};
  cuuint64_t strides[2] = {t.strides[0], t.strides[1]};
  cuuint32_t box[3] = {t.box[0], t.box[1], t.box[2]};
  cuuint32_t elementStrides[3] = {1, 1, 1};
  CUresult r = d.cuTensorMapEncodeTiled(
      &map,
      dtype == DType::F16    ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
      : dtype == DType::BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                             : CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
      3,
      reinterpret_cast<void *>(ptr), dims, strides, box, elementStrides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    const char *name = nullptr;
    d.cuGetErrorName(r, &name);
    fail("{}: cuTensorMapEncodeTiled failed ({}) for dims {}x{}x{}, strides {}/{} bytes, box "
         "{}x{}x{} at 0x{:x}",
         what, name ? name : "unknown error", t.dims[0], t.dims[1], t.dims[2], t.strides[0],
         t.strides[1], t.box[0], t.box[1], t.box[2], ptr);
  }
  return map;
}

} // namespace kfuse::runtime
