# The include half of the layering rule (Note [Layers in the build] in CMakeLists.txt): a file
# of a layer includes headers of its own layer and the layers below it, never one above. The
# linker catches calls into a layer above; this catches includes, which the linker cannot see
# (a header-only use). Run as a test: cmake -DSOURCE_DIR=<ember> -P check_layers.cmake
#
# Each entry: a folder (or one file), "|", then what its files may include besides their own
# folder: folders, or single headers (an entry ending in .h matches that header only).
# kernels/math is the floor below core (Note [Where the generator's math lives] in
# kernels/math/philox.h): it may use core's vocabulary headers and nothing else of core, and
# those headers include only each other.
# distributed may include kernels/cuda/runtime.h, for one call: distributed/nccl_real.cpp hands
# NCCL the cudaStream_t behind an ember Stream (native_stream), as PyTorch's ProcessGroupNCCL
# takes at::cuda::CUDAStream's handle.
cmake_policy(VERSION 3.25)
set(rules
  "kernels/math|core/macros.h,core/half.h,core/dtype.h,core/error.h"
  "core/macros.h|"
  "core/half.h|core/macros.h"
  "core/error.h|core/macros.h"
  "core/dtype.h|core/error.h,core/half.h,core/macros.h"
  "kernels/cuda/sim|"
  "kernels/elementwise|core,kernels/math"
  "kernels/cpu|core,kernels/math,kernels/elementwise"
  "kernels/cuda|core,kernels/math,kernels/elementwise"
  "core|kernels/math"
  "autograd|core,kernels/math"
  "nn|autograd,core"
  "optim|nn,autograd,core"
  "data|autograd,core"
  "serialize|data,optim,nn,autograd,core"
  "distributed|serialize,data,optim,nn,autograd,core,kernels/cuda/runtime.h")
set(layers kernels core autograd nn optim data serialize distributed)
set(bad "")
foreach(rule IN LISTS rules)
  string(REPLACE "|" ";" parts "${rule}")
  list(GET parts 0 folder)
  set(allowed_raw "")
  list(LENGTH parts n)
  if(n GREATER 1)
    list(GET parts 1 allowed_raw)
  endif()
  string(REPLACE "," ";" allowed "${allowed_raw}")
  if(folder MATCHES "\\.h$")
    set(files "")
    if(EXISTS ${SOURCE_DIR}/${folder})
      set(files ${SOURCE_DIR}/${folder})
    endif()
    get_filename_component(own ${folder} NAME)
    set(own_prefix "${folder}")  # a single file: its own name is no licence for its folder
  else()
    file(GLOB_RECURSE files ${SOURCE_DIR}/${folder}/*.h ${SOURCE_DIR}/${folder}/*.cpp
         ${SOURCE_DIR}/${folder}/*.cu ${SOURCE_DIR}/${folder}/*.cuh)
    set(own_prefix "${folder}/")
  endif()
  foreach(f IN LISTS files)
    file(STRINGS ${f} includes REGEX "^#include \"[a-z_]+/")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" inc "${line}")
      set(ok FALSE)
      string(FIND "${inc}" "${own_prefix}" pos)
      if(pos EQUAL 0)
        set(ok TRUE)
      endif()
      foreach(a IN LISTS allowed)
        if(a MATCHES "\\.h$")
          if(inc STREQUAL a)
            set(ok TRUE)
          endif()
        else()
          string(FIND "${inc}" "${a}/" pos)
          if(pos EQUAL 0)
            set(ok TRUE)
          endif()
        endif()
      endforeach()
      # Only includes of ember's own folders count (not "op_table.h" or system headers).
      string(REGEX MATCH "^[a-z_]+" top "${inc}")
      list(FIND layers "${top}" is_layer)
      if(NOT ok AND NOT is_layer EQUAL -1)
        file(RELATIVE_PATH rel ${SOURCE_DIR} ${f})
        list(APPEND bad "${rel} includes ${inc}")
      endif()
    endforeach()
  endforeach()
endforeach()
if(bad)
  list(JOIN bad "\n  " msg)
  message(FATAL_ERROR "includes across the layers, upward:\n  ${msg}")
endif()
message(STATUS "layer includes: every file includes only its own layer and the layers below")
