# ctest driver (cmake -P): configure CONSUMER_SOURCE_DIR from scratch in CONSUMER_BINARY_DIR with
# the initial cache CONSUMER_CACHE, build it, and run the `consumer` program it makes.
# Inputs: CONSUMER_SOURCE_DIR CONSUMER_BINARY_DIR CONSUMER_CACHE CONSUMER_CONFIG CONSUMER_GENERATOR
#         [CONSUMER_GENERATOR_PLATFORM CONSUMER_GENERATOR_TOOLSET CONSUMER_MAKE_PROGRAM]
cmake_minimum_required(VERSION 3.25)

function(run_step what)
  message(STATUS "consumer: ${what}: ${ARGN}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "consumer: ${what} failed (${_rc})")
  endif()
endfunction()

file(REMOVE_RECURSE "${CONSUMER_BINARY_DIR}")
set(_configure "${CMAKE_COMMAND}" -S "${CONSUMER_SOURCE_DIR}" -B "${CONSUMER_BINARY_DIR}"
               -G "${CONSUMER_GENERATOR}" -C "${CONSUMER_CACHE}")
if(CONSUMER_GENERATOR_PLATFORM)
  list(APPEND _configure -A "${CONSUMER_GENERATOR_PLATFORM}")
endif()
if(CONSUMER_GENERATOR_TOOLSET)
  list(APPEND _configure -T "${CONSUMER_GENERATOR_TOOLSET}")
endif()
if(CONSUMER_MAKE_PROGRAM)
  list(APPEND _configure "-DCMAKE_MAKE_PROGRAM=${CONSUMER_MAKE_PROGRAM}")
endif()
if(CONSUMER_CONFIG)
  list(APPEND _configure "-DCMAKE_BUILD_TYPE=${CONSUMER_CONFIG}")
endif()
run_step(configure ${_configure})

if(DEFINED ENV{CMAKE_BUILD_PARALLEL_LEVEL} AND NOT "$ENV{CMAKE_BUILD_PARALLEL_LEVEL}" STREQUAL "")
  set(_jobs "$ENV{CMAKE_BUILD_PARALLEL_LEVEL}")
else()
  cmake_host_system_information(RESULT _jobs QUERY NUMBER_OF_LOGICAL_CORES)
endif()
set(_build "${CMAKE_COMMAND}" --build "${CONSUMER_BINARY_DIR}" --parallel ${_jobs})
if(CONSUMER_CONFIG)
  list(APPEND _build --config "${CONSUMER_CONFIG}")
endif()
run_step(build ${_build})

set(_exe "")
foreach(_candidate "${CONSUMER_BINARY_DIR}/consumer" "${CONSUMER_BINARY_DIR}/consumer.exe"
                   "${CONSUMER_BINARY_DIR}/${CONSUMER_CONFIG}/consumer"
                   "${CONSUMER_BINARY_DIR}/${CONSUMER_CONFIG}/consumer.exe")
  if(NOT _exe AND EXISTS "${_candidate}" AND NOT IS_DIRECTORY "${_candidate}")
    set(_exe "${_candidate}")
  endif()
endforeach()
if(NOT _exe)
  message(FATAL_ERROR "consumer: the build made no `consumer` program in ${CONSUMER_BINARY_DIR}")
endif()
run_step(run "${_exe}")
