# The public headers of ctrax: the umbrella header ctrax.h, everything it includes (followed
# through #include "..." lines, transitively), and the few headers programs include directly for
# the kernels' run-time switches and the devices. Everything else (GEMM micro-kernel bodies, the
# ops' loop helpers, the CUDA kernels' declarations) is internal: it stays in the source tree and
# is never installed. tests/install checks both halves against an installed tree.
set(CTRAX_PUBLIC_HEADER_ROOTS
    ctrax.h
    kernels/cuda/runtime.h           # devices, streams, copies (kernels/cuda/runtime.h)
    kernels/cuda/backend.h           # hand-written, cuBLAS or cuDNN per op
    kernels/elementwise/elementwise.h  # the elementwise ISA switch
    kernels/cpu_features.h
    kernels/optimizer_steps.h)       # the optimizers' fused loops, for benchmarks

# ctrax_public_headers(<out>): the public headers, as paths relative to the source root.
function(ctrax_public_headers out)
  set(_queue ${CTRAX_PUBLIC_HEADER_ROOTS})
  set(_seen "")
  while(_queue)
    list(POP_FRONT _queue _header)
    if(_header IN_LIST _seen OR NOT EXISTS "${PROJECT_SOURCE_DIR}/${_header}")
      continue()
    endif()
    list(APPEND _seen "${_header}")
    file(STRINGS "${PROJECT_SOURCE_DIR}/${_header}" _lines REGEX "^#include \"[^\"]+\"")
    get_filename_component(_dir "${_header}" DIRECTORY)
    foreach(_line IN LISTS _lines)
      string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" _included "${_line}")
      if(_dir)
        set(_path "${_dir}/${_included}")
      else()
        set(_path "${_included}")
      endif()
      cmake_path(NORMAL_PATH _path)
      list(APPEND _queue "${_path}")
    endforeach()
  endwhile()
  list(SORT _seen)
  set(${out} ${_seen} PARENT_SCOPE)
endfunction()
