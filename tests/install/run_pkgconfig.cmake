# ctest driver (cmake -P): compile SOURCE with `pkg-config --cflags --libs ctrax` from the
# installed PREFIX and run it; with ctrax-cuda.pc installed (a CUDA build), the same for
# consumer_gpu_main.cpp with `pkg-config --cflags --libs ctrax-cuda`. Prints CTRAX_TEST_SKIPPED (ctest then reports a skip) when there
# is no pkg-config. Inputs: PKG_CONFIG PREFIX LIBDIR CXX CXX_FLAGS STD_FLAG SOURCE WORK_DIR
# EXPECTED_VERSION SOURCE_DIR.
cmake_minimum_required(VERSION 3.25)

if(NOT PKG_CONFIG OR PKG_CONFIG MATCHES "-NOTFOUND$")
  message("CTRAX_TEST_SKIPPED: pkg-config is not installed (apt-get install pkg-config)")
  return()
endif()

if(IS_ABSOLUTE "${LIBDIR}")
  set(_libdir "${LIBDIR}")
else()
  set(_libdir "${PREFIX}/${LIBDIR}")
endif()
set(ENV{PKG_CONFIG_PATH} "${_libdir}/pkgconfig")
message(STATUS "pkg-config: PKG_CONFIG_PATH=$ENV{PKG_CONFIG_PATH}")

function(pkg_query out)
  execute_process(COMMAND "${PKG_CONFIG}" --print-errors ${ARGN} ctrax
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "pkg-config: `pkg-config ${ARGN} ctrax` failed (${_rc})")
  endif()
  message(STATUS "pkg-config ${ARGN} ctrax: ${_out}")
  set(${out} "${_out}" PARENT_SCOPE)
endfunction()

pkg_query(_version --modversion)
if(NOT _version STREQUAL EXPECTED_VERSION)
  message(FATAL_ERROR "pkg-config: ctrax version ${_version}, expected ${EXPECTED_VERSION}")
endif()
pkg_query(_flags --cflags --libs)
string(FIND "${_flags}" "${PREFIX}/" _at)
if(_at EQUAL -1)
  message(FATAL_ERROR "pkg-config: the flags do not point into the prefix ${PREFIX}")
endif()

separate_arguments(_flags UNIX_COMMAND "${_flags}")
separate_arguments(_cxx_flags UNIX_COMMAND "${CXX_FLAGS}")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(_exe "${WORK_DIR}/consumer")
set(_compile "${CXX}" ${_cxx_flags} ${STD_FLAG} "${SOURCE}" -o "${_exe}" ${_flags})
list(JOIN _compile " " _shown)
message(STATUS "pkg-config: compile: ${_shown}")
execute_process(COMMAND ${_compile} RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "pkg-config: compiling the consumer failed (${_rc})")
endif()
# A shared libctrax in a non-system prefix: let the loader find it (pkg-config gives no rpath).
set(ENV{LD_LIBRARY_PATH} "${_libdir}:$ENV{LD_LIBRARY_PATH}")
execute_process(COMMAND "${_exe}" RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "pkg-config: the consumer failed (${_rc})")
endif()

# The CUDA component, when installed: the program must have the CUDA module from its start.
if(EXISTS "${_libdir}/pkgconfig/ctrax-cuda.pc")
  execute_process(COMMAND "${PKG_CONFIG}" --print-errors --cflags --libs ctrax-cuda
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _gpu_flags OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "pkg-config: `pkg-config --cflags --libs ctrax-cuda` failed (${_rc})")
  endif()
  message(STATUS "pkg-config --cflags --libs ctrax-cuda: ${_gpu_flags}")
  separate_arguments(_gpu_flags UNIX_COMMAND "${_gpu_flags}")
  get_filename_component(_gpu_source "${SOURCE}" DIRECTORY)
  set(_gpu_exe "${WORK_DIR}/consumer_gpu")
  execute_process(COMMAND "${CXX}" ${_cxx_flags} ${STD_FLAG} "${_gpu_source}/consumer_gpu_main.cpp" -o "${_gpu_exe}"
                          ${_gpu_flags} RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "pkg-config: compiling consumer_gpu failed (${_rc})")
  endif()
  execute_process(COMMAND "${_gpu_exe}" RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "pkg-config: consumer_gpu failed (${_rc})")
  endif()
endif()
