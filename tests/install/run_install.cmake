# ctest driver (cmake -P): install the build tree BUILD_DIR into PREFIX (emptied first) and
# check the installed layout. Inputs: BUILD_DIR PREFIX CONFIG LIBDIR INCLUDEDIR SOURCE_DIR.
cmake_minimum_required(VERSION 3.25)

file(REMOVE_RECURSE "${PREFIX}")
set(_cmd "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}")
if(CONFIG)
  list(APPEND _cmd --config "${CONFIG}")
endif()
message(STATUS "install: ${_cmd}")
execute_process(COMMAND ${_cmd} RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "install: cmake --install failed (${_rc})")
endif()

if(IS_ABSOLUTE "${LIBDIR}")
  set(_libdir "${LIBDIR}")
else()
  set(_libdir "${PREFIX}/${LIBDIR}")
endif()
if(IS_ABSOLUTE "${INCLUDEDIR}")
  set(_incdir "${INCLUDEDIR}")
else()
  set(_incdir "${PREFIX}/${INCLUDEDIR}")
endif()

set(_missing "")
foreach(_file
    "${_incdir}/ctrax/kernels/gemm.h"
    "${_incdir}/ctrax/kernels/check.h"
    "${_libdir}/cmake/ctrax/ctraxConfig.cmake"
    "${_libdir}/cmake/ctrax/ctraxConfigVersion.cmake"
    "${_libdir}/cmake/ctrax/ctraxTargets.cmake"
    "${_libdir}/pkgconfig/ctrax.pc")
  if(NOT EXISTS "${_file}")
    list(APPEND _missing "${_file}")
  endif()
endforeach()
file(GLOB _libs "${_libdir}/libctrax.*" "${_libdir}/ctrax.lib" "${_libdir}/ctrax*.lib")
if(NOT _libs)
  list(APPEND _missing "${_libdir}/libctrax.*")
endif()
# Every header of the source tree's public folders must be there, at the same relative path.
foreach(_folder kernels tensor autograd layers optim rl)
  file(GLOB_RECURSE _headers RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/${_folder}/*.h")
  foreach(_h IN LISTS _headers)
    if(NOT EXISTS "${_incdir}/ctrax/${_h}")
      list(APPEND _missing "${_incdir}/ctrax/${_h}")
    endif()
  endforeach()
endforeach()
if(EXISTS "${SOURCE_DIR}/ctrax.h" AND NOT EXISTS "${_incdir}/ctrax/ctrax.h")
  list(APPEND _missing "${_incdir}/ctrax/ctrax.h")
endif()
if(_missing)
  list(JOIN _missing "\n  " _missing)
  message(FATAL_ERROR "install: missing after install:\n  ${_missing}")
endif()

# The package files must not point back into the source or build tree (the prefix itself lives
# inside the build tree here, so it is masked first).
file(GLOB _package_files "${_libdir}/cmake/ctrax/*.cmake" "${_libdir}/pkgconfig/ctrax.pc")
foreach(_file IN LISTS _package_files)
  file(READ "${_file}" _text)
  string(REPLACE "${PREFIX}" "<prefix>" _text "${_text}")
  foreach(_tree "${SOURCE_DIR}" "${BUILD_DIR}")
    string(FIND "${_text}" "${_tree}" _at)
    if(NOT _at EQUAL -1)
      message(FATAL_ERROR "install: ${_file} refers to ${_tree}")
    endif()
  endforeach()
endforeach()

file(READ "${_libdir}/pkgconfig/ctrax.pc" _pc)
message(STATUS "install: OK, into ${PREFIX}; ctrax.pc:\n${_pc}")
