# The ctest `subdirectory` (tests/CMakeLists.txt): kfuse built inside another project with
# add_subdirectory. Configures this folder (CONSUMER_DIR) with -DKFUSE_SOURCE_DIR=SOURCE_DIR
# in WORK_DIR: it must configure, and the file kfuse generates from its own sources (the
# embedded device code, codegen/cuda/DeviceCode.cmake) must be built into kfuse's build
# folder, not the consumer's: under add_subdirectory CMAKE_SOURCE_DIR and CMAKE_BINARY_DIR
# are the consumer's, and kfuse once named its files from them ("No SOURCES given to
# target"). Building kfuse again would take minutes; the package test builds a consumer.
#   cmake -DSOURCE_DIR=. -DCONSUMER_DIR=examples/consumer -DWORK_DIR=/tmp/sub
#         -DGENERATOR=Ninja [-DCUDA_ROOT=..] [-DC_COMPILER=..] [-DCXX_COMPILER=..]
#         -P test_subdirectory.cmake
foreach(v SOURCE_DIR CONSUMER_DIR WORK_DIR GENERATOR)
  if(NOT ${v})
    message(FATAL_ERROR "test_subdirectory.cmake: -D${v}=... is required")
  endif()
endforeach()

function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "subdirectory: ${what} failed (${rc}):\n${out}")
  endif()
  message(STATUS "subdirectory: ${what}: ok")
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(args -S ${CONSUMER_DIR} -B ${WORK_DIR} -G ${GENERATOR} -DKFUSE_SOURCE_DIR=${SOURCE_DIR})
foreach(pair "C_COMPILER;CMAKE_C_COMPILER" "CXX_COMPILER;CMAKE_CXX_COMPILER"
             "CUDA_ROOT;CUDAToolkit_ROOT")
  list(GET pair 0 mine)
  list(GET pair 1 theirs)
  if(${mine})
    list(APPEND args "-D${theirs}=${${mine}}")
  endif()
endforeach()
step("configure examples/consumer with add_subdirectory(kfuse)" ${CMAKE_COMMAND} ${args})
# The build rules: the embedded device code in kfuse's folder, from kfuse's sources.
file(GLOB_RECURSE rules ${WORK_DIR}/*.ninja ${WORK_DIR}/Makefile ${WORK_DIR}/*.make)
set(found OFF)
foreach(r ${rules})
  file(READ ${r} text)
  if(text MATCHES "kfuse/generated/codegen/DeviceFiles\\.cpp")
    set(found ON)
  endif()
  string(REPLACE "${WORK_DIR}/kfuse/" "" text "${text}")
  if(text MATCHES "${WORK_DIR}/generated/")
    message(FATAL_ERROR "subdirectory: kfuse writes into the consumer's build folder (${r})")
  endif()
endforeach()
if(NOT found)
  message(FATAL_ERROR "subdirectory: no rule builds kfuse/generated/codegen/DeviceFiles.cpp")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
