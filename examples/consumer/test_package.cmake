# The ctest `package` (tests/CMakeLists.txt): kfuse as another project sees it. Installs the
# build BUILD_DIR into WORK_DIR/prefix, configures this folder (CONSUMER_DIR) against it with
# find_package(kfuse) only (CMAKE_PREFIX_PATH; no package registry, no kfuse sources), builds
# consumer_cpp (kfuse::kfuse) and consumer_c (kfuse::c) and runs both: their CPU parts check
# numbers, their GPU parts skip without a device. Run as:
#   cmake -DBUILD_DIR=build -DCONSUMER_DIR=examples/consumer -DWORK_DIR=/tmp/pkg
#         -DGENERATOR=Ninja [-DBUILD_TYPE=..] [-DC_COMPILER=..] [-DCXX_COMPILER=..]
#         [-DCUDA_ROOT=..] [-DLINK_FLAGS=..] -P test_package.cmake
foreach(v BUILD_DIR CONSUMER_DIR WORK_DIR GENERATOR)
  if(NOT ${v})
    message(FATAL_ERROR "test_package.cmake: -D${v}=... is required")
  endif()
endforeach()

function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "package: ${what} failed (${rc}):\n${out}")
  endif()
  message(STATUS "package: ${what}: ok")
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
step("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(f bin/kfuse include/kfuse/kfuse.h include/kfuse/ir/Builder.h include/kfuse/ir/Ops.def
          lib/libkfuse.so lib/libkfuse_runtime.a lib/cmake/kfuse/kfuseConfig.cmake
          lib/cmake/kfuse/kfuseConfigVersion.cmake lib/cmake/kfuse/kfuseTargets.cmake)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "package: the install lacks ${f}")
  endif()
endforeach()
# The installed CLI starts on its own (its NVRTC found through its install RPATH or ldconfig).
step("installed kfuse --version" ${prefix}/bin/kfuse --version)

set(args -S ${CONSUMER_DIR} -B ${WORK_DIR}/build -G ${GENERATOR}
         -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
foreach(pair "BUILD_TYPE;CMAKE_BUILD_TYPE" "C_COMPILER;CMAKE_C_COMPILER"
             "CXX_COMPILER;CMAKE_CXX_COMPILER" "CUDA_ROOT;CUDAToolkit_ROOT"
             "LINK_FLAGS;CMAKE_EXE_LINKER_FLAGS")
  list(GET pair 0 mine)
  list(GET pair 1 theirs)
  if(${mine})
    list(APPEND args "-D${theirs}=${${mine}}")
  endif()
endforeach()
step("configure examples/consumer" ${CMAKE_COMMAND} ${args})
# The package, not a source tree, must be what was found.
file(STRINGS ${WORK_DIR}/build/CMakeCache.txt found REGEX "^kfuse_DIR:")
if(NOT found MATCHES "=${prefix}/")
  message(FATAL_ERROR "package: the consumer found kfuse elsewhere: ${found}")
endif()
step("build examples/consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
foreach(program consumer_cpp consumer_c)
  step("run ${program}" ${WORK_DIR}/build/${program})
  message(STATUS "${step_output}")
endforeach()
