# The data-parallel end-to-end test of ember-train (CTest "ember_train_ddp"): ember-run starts 2
# ranks on the cpu (Gloo over loopback, DistributedDataParallel), on the first 2000 training
# images.
#   run A: 2 ranks x batch 64 for 2 epochs, with checkpoints and metrics;
#   run S: 1 process x batch 128 (the same images per step: rank r takes positions r, r + 2, ...
#          of the same permutation, so a step of A averages the gradients of S's batch halves);
#   run B: A stopped after 20 steps (mid-way through epoch 2), then resumed on both ranks.
# Checks: both ranks print a JSON line with their rank and world size 2 and the same numbers;
# A ends where S does (within float rounding: the sums run in another order); B ends with
# exactly A's numbers and A's metrics file (rank 0 writes it).
# Usage: cmake -DRUN=ember-run -DTRAIN=ember-train -DWORK_DIR=scratch -P train_ddp_e2e.cmake

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(common --model mlp --epochs 2 --train-subset 2000 --optimizer adam --lr 0.003 --seed 7
           --threads 1 --dist-timeout 60)

# Runs a command; sets <out_var> to the list of its stdout lines that are JSON objects.
function(run_json out_var)
  execute_process(COMMAND ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc
                  TIMEOUT 240)
  message(STATUS "${ARGN}\n${err}${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "exited with ${rc}")
  endif()
  string(REPLACE "\n" ";" lines "${out}")
  set(json "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^{")
      list(APPEND json "${line}")
    endif()
  endforeach()
  set(${out_var} "${json}" PARENT_SCOPE)
endfunction()

# The JSON line of `rank` among `lines`.
function(line_of_rank out_var lines rank)
  foreach(line IN LISTS lines)
    string(JSON r GET "${line}" rank)
    if(r EQUAL rank)
      set(${out_var} "${line}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  message(FATAL_ERROR "no JSON line of rank ${rank} among: ${lines}")
endfunction()

set(launch "${RUN}" --nproc-per-node 2 --master-port 0 "${TRAIN}")
run_json(a ${launch} ${common} --checkpoint-dir "${WORK_DIR}/a" --metrics "${WORK_DIR}/a.csv")
list(LENGTH a n)
if(NOT n EQUAL 2)
  message(FATAL_ERROR "expected one JSON line per rank, got ${n}: ${a}")
endif()
line_of_rank(a0 "${a}" 0)
line_of_rank(a1 "${a}" 1)
foreach(key test_acc test_loss train_loss train_acc steps world_size)
  string(JSON v0 GET "${a0}" ${key})
  string(JSON v1 GET "${a1}" ${key})
  if(NOT v0 STREQUAL v1)
    message(FATAL_ERROR "the ranks differ in ${key}: ${v0} (rank 0) and ${v1} (rank 1)")
  endif()
endforeach()
string(JSON world GET "${a0}" world_size)
string(JSON steps GET "${a0}" steps)
if(NOT world EQUAL 2 OR NOT steps EQUAL 32)
  message(FATAL_ERROR "expected world_size 2 and 32 steps (1000 images a rank, batch 64): ${a0}")
endif()
foreach(f epoch-1 epoch-2 last)
  if(NOT EXISTS "${WORK_DIR}/a/${f}.safetensors")
    message(FATAL_ERROR "rank 0 wrote no checkpoint ${WORK_DIR}/a/${f}.safetensors")
  endif()
endforeach()

run_json(s "${TRAIN}" ${common} --batch-size 128)
list(GET s 0 s0)
foreach(key test_loss train_loss)
  string(JSON va GET "${a0}" ${key})
  string(JSON vs GET "${s0}" ${key})
  # One process x 128 and two ranks x 64 see the same images per step: the losses agree to the
  # 4th significant digit at least (the reductions sum in another order).
  string(SUBSTRING "${va}" 0 5 va5)
  string(SUBSTRING "${vs}" 0 5 vs5)
  if(NOT va5 STREQUAL vs5)
    message(FATAL_ERROR "2 ranks x batch 64 end with ${key} ${va}, 1 process x batch 128 with ${vs}")
  endif()
endforeach()

run_json(stopped ${launch} ${common} --checkpoint-dir "${WORK_DIR}/b" --metrics "${WORK_DIR}/b.csv"
         --stop-after 20)
if(NOT stopped STREQUAL "")
  message(FATAL_ERROR "a stopped run prints no JSON line, got: ${stopped}")
endif()
run_json(b ${launch} ${common} --checkpoint-dir "${WORK_DIR}/b" --metrics "${WORK_DIR}/b.csv"
         --resume)
line_of_rank(b0 "${b}" 0)
line_of_rank(b1 "${b}" 1)
foreach(key test_acc test_loss train_loss train_acc steps)
  string(JSON va GET "${a0}" ${key})
  string(JSON vb GET "${b0}" ${key})
  string(JSON vb1 GET "${b1}" ${key})
  if(NOT va STREQUAL vb OR NOT va STREQUAL vb1)
    message(FATAL_ERROR "the resumed run differs in ${key}: ${vb} / ${vb1} vs ${va} uninterrupted")
  endif()
endforeach()
file(STRINGS "${WORK_DIR}/a.csv" rows_a)
file(STRINGS "${WORK_DIR}/b.csv" rows_b)
foreach(i 0 1 2)
  list(GET rows_a ${i} ra)
  list(GET rows_b ${i} rb)
  string(REGEX REPLACE ",[^,]*$" "" ra "${ra}")  # the seconds differ
  string(REGEX REPLACE ",[^,]*$" "" rb "${rb}")
  if(NOT ra STREQUAL rb)
    message(FATAL_ERROR "metrics of the resumed run differ: '${rb}' vs '${ra}'")
  endif()
endforeach()
message(STATUS "ember-train data-parallel: 2 ranks agree, match 1 process x 128, exact resume OK")
