# The include half of the layering rule (Note [Layers in the build] in CMakeLists.txt): a file
# of a layer includes headers of its own layer and the layers below it, never one above. The
# linker catches calls into a layer above; this catches includes, which the linker cannot see
# (a header-only use). Run as a test: cmake -DSOURCE_DIR=<ember> -P check_layers.cmake
#
# Each entry: a folder, "|", then the folders (comma-separated) its files may include from
# besides its own.
set(rules
  "kernels/math|core"
  "kernels/cpu|core,kernels/math"
  "core|kernels/math"
  "autograd|core,kernels/math"
  "nn|autograd,core"
  "optim|nn,autograd,core"
  "data|autograd,core"
  "serialize|data,optim,nn,autograd,core")
set(layers kernels core autograd nn optim data serialize)
set(bad "")
foreach(rule IN LISTS rules)
  string(REPLACE "|" ";" parts "${rule}")
  list(GET parts 0 folder)
  list(GET parts 1 allowed_raw)
  string(REPLACE "," ";" allowed "${allowed_raw}")
  file(GLOB_RECURSE files ${SOURCE_DIR}/${folder}/*.h ${SOURCE_DIR}/${folder}/*.cpp)
  foreach(f IN LISTS files)
    file(STRINGS ${f} includes REGEX "^#include \"[a-z_]+/")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" inc "${line}")
      set(ok FALSE)
      foreach(a IN LISTS allowed ITEMS ${folder})
        string(FIND "${inc}" "${a}/" pos)
        if(pos EQUAL 0)
          set(ok TRUE)
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
