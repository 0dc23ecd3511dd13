# Fails if any binary in FILES (a ;-list) records libcuda in its dynamic section: the runtime
# dlopens the driver (runtime/Driver.cpp) so that every tool and test starts on a machine
# without one. Run as: cmake -DREADELF=... -DFILES=a;b -P NoDriverLink.cmake
foreach(f ${FILES})
  execute_process(COMMAND ${READELF} -d ${f} OUTPUT_VARIABLE dyn RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${READELF} -d ${f} failed (${rc})")
  endif()
  if(dyn MATCHES "NEEDED[^\n]*libcuda\\.so")
    message(FATAL_ERROR "${f} links libcuda.so (the CUDA driver must only be dlopen'ed)")
  endif()
  message(STATUS "${f}: no libcuda.so in NEEDED")
endforeach()
