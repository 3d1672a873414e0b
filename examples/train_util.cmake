# Helpers of the ember-train end-to-end scripts (train_e2e.cmake, train_cuda_e2e.cmake,
# train_amp_e2e.cmake): include(${CMAKE_CURRENT_LIST_DIR}/train_util.cmake) with TRAIN set.

# Runs ember-train with ARGN; sets <out_var> to its last stdout line. Fails on a non-zero exit
# status, except that when RUN_TRAIN_SKIP_PATTERN is set and stderr matches it, <out_var> is
# "SKIPPED" (a cuda run on a machine without a GPU).
function(run_train out_var)
  execute_process(COMMAND "${TRAIN}" ${ARGN}
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  message(STATUS "ember-train ${ARGN}\n${err}${out}")
  if(DEFINED RUN_TRAIN_SKIP_PATTERN AND err MATCHES "${RUN_TRAIN_SKIP_PATTERN}")
    message(STATUS "SKIPPED: ${RUN_TRAIN_SKIP_PATTERN}")
    set(${out_var} "SKIPPED" PARENT_SCOPE)
    return()
  endif()
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ember-train exited with ${rc}")
  endif()
  string(STRIP "${out}" out)
  string(REGEX REPLACE ".*\n" "" last "${out}")
  set(${out_var} "${last}" PARENT_SCOPE)
endfunction()

# Fails unless the JSON lines `expected` and `got` agree on every key of ARGN; `what` names the
# comparison in the message ("resumed run").
function(expect_same_json what expected got)
  foreach(key ${ARGN})
    string(JSON va GET "${expected}" ${key})
    string(JSON vb GET "${got}" ${key})
    if(NOT va STREQUAL vb)
      message(FATAL_ERROR "${what} differs in ${key}: ${vb} vs ${va}")
    endif()
  endforeach()
endfunction()
