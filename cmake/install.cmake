# Installation and packaging of ctrax: the library, its headers, a CMake package
# (find_package(ctrax CONFIG) -> ctrax::ctrax) and a pkg-config file (ctrax.pc).
# Included at the end of the top-level CMakeLists.txt, after the ctrax target is complete.
#
# Layout under the prefix:
#   include/ctrax/<folder>/...h            the public headers (cmake/public_headers.cmake), relative
#                                          paths kept (they include each other with relative paths
#                                          such as "../base/error.h")
#   include/ctrax/ctrax.h                  the umbrella header, when the repository has one
#   ${CMAKE_INSTALL_LIBDIR}/libctrax.a     (or .so with -DBUILD_SHARED_LIBS=ON)
#   ${CMAKE_INSTALL_LIBDIR}/libctrax_cuda.so.0   the CUDA module, in CUDA builds (ctrax::cuda)
#   ${CMAKE_INSTALL_LIBDIR}/libctrax_mpi.so.0    the MPI module, in MPI builds (opened by dist::MpiCommunicator)
#   ${CMAKE_INSTALL_LIBDIR}/cmake/ctrax/   ctraxConfig.cmake, ctraxConfigVersion.cmake, ctraxTargets*.cmake
#   ${CMAKE_INSTALL_LIBDIR}/pkgconfig/ctrax.pc, ctrax-cuda.pc (CUDA builds)
include(CMakePackageConfigHelpers)

set(CTRAX_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/ctrax CACHE STRING
    "Where ctraxConfig.cmake is installed, relative to the prefix")
mark_as_advanced(CTRAX_INSTALL_CMAKEDIR)


get_target_property(_ctrax_type ctrax TYPE)

# ---------------------------------------------------------------------------------------------
# Library and headers
# ---------------------------------------------------------------------------------------------
install(TARGETS ctrax EXPORT ctraxTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# The public headers only (cmake/public_headers.cmake): ctrax.h and what it includes, plus the
# kernels' switches. The list is made at configure time; every header file counts, so adding an
# include to a public header re-runs it. Written out for the install test.
include(${CMAKE_CURRENT_LIST_DIR}/public_headers.cmake)
ctrax_public_headers(CTRAX_PUBLIC_HEADERS)
foreach(_header IN LISTS CTRAX_PUBLIC_HEADERS)
  set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${_header})
  get_filename_component(_dir "${_header}" DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${_header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ctrax/${_dir})
endforeach()
string(REPLACE ";" "\n" _public_list "${CTRAX_PUBLIC_HEADERS}")
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/ctrax_public_headers.txt CONTENT "${_public_list}\n")

# The CUDA module (libctrax_cuda.so, kernels/CMakeLists.txt): installed beside libctrax in its
# own export set, so that find_package(ctrax COMPONENTS cuda) is what defines ctrax::cuda. It
# is a shared library that links CUDA itself: its users need no CUDA package to link it.
if(TARGET ctrax_cuda)
  install(TARGETS ctrax_cuda EXPORT ctraxCudaTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# The MPI module (libctrax_mpi.so, dist/CMakeLists.txt): installed beside libctrax, where
# dist::MpiCommunicator looks for it; programs never link it.
if(TARGET ctrax_mpi)
  install(TARGETS ctrax_mpi LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

# ---------------------------------------------------------------------------------------------
# CMake package: find_package(ctrax CONFIG) -> ctrax::ctrax; COMPONENTS cuda -> ctrax::cuda
# ---------------------------------------------------------------------------------------------
install(EXPORT ctraxTargets NAMESPACE ctrax:: DESTINATION ${CTRAX_INSTALL_CMAKEDIR})
if(TARGET ctrax_cuda)
  install(EXPORT ctraxCudaTargets NAMESPACE ctrax:: DESTINATION ${CTRAX_INSTALL_CMAKEDIR})
endif()

set(CTRAX_CONFIG_CUDA OFF)
if(CTRAX_CUDA)
  set(CTRAX_CONFIG_CUDA ON)
endif()
set(CTRAX_CONFIG_CUDNN OFF)
if(CTRAX_CUDNN)
  set(CTRAX_CONFIG_CUDNN ON)
endif()
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/ctraxConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/ctraxConfig.cmake
  INSTALL_DESTINATION ${CTRAX_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/ctraxConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)  # 0.x: minor versions may break the API
install(FILES ${PROJECT_BINARY_DIR}/cmake/ctraxConfig.cmake ${PROJECT_BINARY_DIR}/cmake/ctraxConfigVersion.cmake
  DESTINATION ${CTRAX_INSTALL_CMAKEDIR})

# ---------------------------------------------------------------------------------------------
# pkg-config: ctrax.pc
#
# For a static libctrax, `pkg-config --libs` (without --static) must already name everything a
# program needs to link, so OpenBLAS and -pthread go into Libs; for a shared one they are
# Libs.private. Compile definitions and sanitizer flags that the CMake target carries PUBLICly
# are mirrored in Cflags/Libs so pkg-config users get the same ABI.
# The prefix is written at install time, so `cmake --install --prefix P` yields a correct file.
# ---------------------------------------------------------------------------------------------
set(_pc_cflags "")
set(_pc_deps "")
# (OpenBLAS is not linked: ctrax opens it when the openblas GEMM backend is first asked for.)
# dlopen, for the CUDA module's loader (part of libc since glibc 2.34; -ldl still links there).
if(CMAKE_DL_LIBS)
  string(APPEND _pc_deps " -l${CMAKE_DL_LIBS}")
endif()
string(APPEND _pc_deps " -pthread")
set(_pc_sanitize "")
if(CTRAX_SANITIZE)
  string(APPEND _pc_cflags " -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined")
  set(_pc_sanitize " -fsanitize=address,undefined")
endif()
if(_ctrax_type STREQUAL "STATIC_LIBRARY")
  set(CTRAX_PC_LIBS "-L\${libdir} -lctrax${_pc_deps}${_pc_sanitize}")
  set(CTRAX_PC_LIBS_PRIVATE "")
else()
  set(CTRAX_PC_LIBS "-L\${libdir} -lctrax${_pc_sanitize}")
  string(STRIP "${_pc_deps}" CTRAX_PC_LIBS_PRIVATE)
endif()
string(STRIP "-I\${includedir}${_pc_cflags}" CTRAX_PC_CFLAGS)

foreach(_kind LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_kind}}")
    set(CTRAX_PC_${_kind} "${CMAKE_INSTALL_${_kind}}")
  else()
    set(CTRAX_PC_${_kind} "\${prefix}/${CMAKE_INSTALL_${_kind}}")
  endif()
endforeach()
# Stage 1 (configure time): everything but the prefix, which is left as @CTRAX_PC_PREFIX@. Stage 2
# (install time, where CMAKE_INSTALL_PREFIX is the real one, --prefix included): substitute it;
# the finished file is then installed like any other file.
set(CTRAX_PC_PREFIX "@CTRAX_PC_PREFIX@")
configure_file(${CMAKE_CURRENT_LIST_DIR}/ctrax.pc.in ${PROJECT_BINARY_DIR}/cmake/ctrax.pc.stage @ONLY)
install(CODE "
  file(READ \"${PROJECT_BINARY_DIR}/cmake/ctrax.pc.stage\" _ctrax_pc)
  string(REPLACE \"@CTRAX_PC_PREFIX@\" \"\${CMAKE_INSTALL_PREFIX}\" _ctrax_pc \"\${_ctrax_pc}\")
  file(WRITE \"${PROJECT_BINARY_DIR}/cmake/ctrax.pc\" \"\${_ctrax_pc}\")
")
install(FILES ${PROJECT_BINARY_DIR}/cmake/ctrax.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# ctrax-cuda.pc, for programs that want the GPU from their start: ctrax plus the CUDA module,
# kept as a needed library even where the linker drops unused ones (--as-needed).
if(TARGET ctrax_cuda)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/ctrax-cuda.pc.in ${PROJECT_BINARY_DIR}/cmake/ctrax-cuda.pc.stage @ONLY)
  install(CODE "
    file(READ \"${PROJECT_BINARY_DIR}/cmake/ctrax-cuda.pc.stage\" _ctrax_pc)
    string(REPLACE \"@CTRAX_PC_PREFIX@\" \"\${CMAKE_INSTALL_PREFIX}\" _ctrax_pc \"\${_ctrax_pc}\")
    file(WRITE \"${PROJECT_BINARY_DIR}/cmake/ctrax-cuda.pc\" \"\${_ctrax_pc}\")
  ")
  install(FILES ${PROJECT_BINARY_DIR}/cmake/ctrax-cuda.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()

unset(_ctrax_type)
unset(_pc_cflags)
unset(_pc_deps)
unset(_pc_sanitize)
unset(_kind)
unset(_folder)
