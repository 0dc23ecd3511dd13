# The device helpers of generated programs, codegen/cuda/*.cuh, embedded in kfuse_codegen as
# string constants (the generated DeviceFiles.cpp; codegen/DeviceCode.h reads them). Real
# files so that they can be read, formatted and compiled on their own
# (tests/unit/DeviceCodeTest.cpp compiles each with NVRTC).
#
# The list is the order in which a program carries them: every file after the files its
# `// kfuse-requires:` line names (a unit test checks it). Kept in the order the helpers had
# when they were one string, so that generated programs did not change.
set(KFUSE_DEVICE_FILES
  convert.cuh math_nan.cuh math_minmax.cuh prefetch.cuh math_relu.cuh math_sigmoid.cuh
  math_silu.cuh math_gelu.cuh math_gelu_tanh.cuh
  gemm_el.cuh load16.cuh smem_addr.cuh cp_async.cuh ldmatrix.cuh mma_sync.cuh tile_load.cuh
  mma_tf32.cuh gemm_tc.cuh gemm_simt.cuh gemv_nk.cuh gemv_kn.cuh
  tma.cuh wgmma.cuh gemm_wgmma.cuh gemm_decode.cuh row_reduce.cuh group_sync.cuh cluster_push.cuh bulk_copy.cuh)

# This file's folder and kfuse's build folder, not CMAKE_SOURCE_DIR / CMAKE_BINARY_DIR:
# under another project's add_subdirectory(kfuse) those are the other project's.
set(device_dir ${CMAKE_CURRENT_LIST_DIR})
# A file missing from the list would never reach a program: fail at configure time instead.
file(GLOB device_found CONFIGURE_DEPENDS RELATIVE ${device_dir} ${device_dir}/*.cuh)
foreach(f ${device_found})
  if(NOT f IN_LIST KFUSE_DEVICE_FILES)
    message(FATAL_ERROR "codegen/cuda/${f} is not in KFUSE_DEVICE_FILES (codegen/cuda/DeviceCode.cmake)")
  endif()
endforeach()

set(device_paths "")
foreach(f ${KFUSE_DEVICE_FILES})
  list(APPEND device_paths ${device_dir}/${f})
endforeach()
# A list argument would be split at its semicolons on the way to the script: commas.
string(REPLACE ";" "," device_arg "${KFUSE_DEVICE_FILES}")
set(device_cpp ${PROJECT_BINARY_DIR}/generated/codegen/DeviceFiles.cpp)
add_custom_command(
  OUTPUT ${device_cpp}
  COMMAND ${CMAKE_COMMAND} -DDIR=${device_dir} -DFILES=${device_arg} -DOUT=${device_cpp}
          -P ${device_dir}/EmbedDeviceCode.cmake
  DEPENDS ${device_paths} ${device_dir}/EmbedDeviceCode.cmake
  COMMENT "Embedding codegen/cuda/*.cuh"
  VERBATIM)
target_sources(kfuse_codegen PRIVATE ${device_cpp})
