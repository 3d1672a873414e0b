# The end-to-end test of ember-train (CTest "ember_train_e2e"), on the first 2000 training
# images so that it takes seconds:
#   run A: 2 epochs of the MLP (Adam, the one-cycle schedule stepped per batch, augmentation:
#          every part of the state a resume must restore) with checkpoints and metrics;
#   run B: the same, stopped after 40 steps (mid-way through epoch 2: 32 steps per epoch), then
#          resumed with --resume.
# Checks: A's JSON line has a sane test accuracy (> 0.6) and the expected fields, its metrics
# CSV has a header and one row per epoch, each epoch left a checkpoint, and B ends with exactly
# A's losses and accuracies (exact resume), with A's metrics file.
# Usage: cmake -DTRAIN=path/to/ember-train -DWORK_DIR=scratch -DEMBER_CUDA=off|sim|real
#        -P train_e2e.cmake

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(common --model mlp --epochs 2 --train-subset 2000 --optimizer adam --lr 0.003
           --schedule onecycle --augment --seed 7 --threads 1)

include(${CMAKE_CURRENT_LIST_DIR}/train_util.cmake)  # run_train, expect_same_json

run_train(a ${common} --checkpoint-dir "${WORK_DIR}/a" --metrics "${WORK_DIR}/a.csv")

foreach(key model epochs test_acc train_seconds train_loss params threads seed)
  string(JSON value ERROR_VARIABLE json_err GET "${a}" ${key})
  if(json_err)
    message(FATAL_ERROR "the final line is not JSON with '${key}': ${a} (${json_err})")
  endif()
endforeach()
string(JSON model GET "${a}" model)
string(JSON params GET "${a}" params)
string(JSON acc GET "${a}" test_acc)
if(NOT model STREQUAL "mlp" OR NOT params EQUAL 235146)
  message(FATAL_ERROR "expected the mlp with 235146 parameters: ${a}")
endif()
if(NOT acc GREATER 0.6 OR acc GREATER 1)
  message(FATAL_ERROR "test_acc ${acc} is not a sane accuracy after 2 epochs on 2000 images")
endif()

file(STRINGS "${WORK_DIR}/a.csv" rows)
list(LENGTH rows n)
list(GET rows 0 header)
if(NOT header STREQUAL "epoch,step,train_loss,train_acc,test_loss,test_acc,lr,seconds" OR
   NOT n EQUAL 3)
  message(FATAL_ERROR "metrics CSV: expected a header and 2 rows, got:\n${rows}")
endif()
list(GET rows 2 row)
if(NOT row MATCHES "^2,64,")
  message(FATAL_ERROR "metrics CSV: the last row should be epoch 2 at step 64: ${row}")
endif()
foreach(f epoch-1 epoch-2 last)
  if(NOT EXISTS "${WORK_DIR}/a/${f}.safetensors")
    message(FATAL_ERROR "missing checkpoint ${WORK_DIR}/a/${f}.safetensors")
  endif()
endforeach()

# Run B: stopped mid-epoch, then resumed.
run_train(stopped ${common} --checkpoint-dir "${WORK_DIR}/b" --metrics "${WORK_DIR}/b.csv"
          --stop-after 40)
if(NOT stopped STREQUAL "")
  message(FATAL_ERROR "a stopped run prints no JSON line, got: ${stopped}")
endif()
run_train(b ${common} --checkpoint-dir "${WORK_DIR}/b" --metrics "${WORK_DIR}/b.csv" --resume)
expect_same_json("the resumed run (vs uninterrupted)" "${a}" "${b}" test_acc test_loss train_loss
                 train_acc steps)
file(STRINGS "${WORK_DIR}/b.csv" rows_b)
foreach(i 0 1 2)
  list(GET rows ${i} ra)
  list(GET rows_b ${i} rb)
  string(REGEX REPLACE ",[^,]*$" "" ra "${ra}")  # the seconds differ
  string(REGEX REPLACE ",[^,]*$" "" rb "${rb}")
  if(NOT ra STREQUAL rb)
    message(FATAL_ERROR "metrics of the resumed run differ: '${rb}' vs '${ra}'")
  endif()
endforeach()

# --device cuda: a CPU-only build (EMBER_CUDA=off) says the backend is not built; a real build
# trains, or on a machine without a GPU says there is none. The simulator builds train on cuda
# in their own test (ember_train_cuda, examples/train_cuda_e2e.cmake), which under the
# sanitizers takes minutes.
if(EMBER_CUDA STREQUAL "off" OR EMBER_CUDA STREQUAL "real")
  execute_process(COMMAND "${TRAIN}" --device cuda --epochs 1 --train-subset 64
                  ERROR_VARIABLE err RESULT_VARIABLE rc OUTPUT_QUIET)
  if(EMBER_CUDA STREQUAL "off")
    set(expected "CUDA backend is not built")
  else()
    set(expected "no such CUDA device|no CUDA device|CUDA driver")
  endif()
  if(NOT rc EQUAL 0 AND NOT err MATCHES "${expected}")
    message(FATAL_ERROR "--device cuda (EMBER_CUDA=${EMBER_CUDA}): expected training or a clear "
                        "error matching '${expected}', got ${rc}: ${err}")
  endif()
  if(rc EQUAL 0 AND EMBER_CUDA STREQUAL "off")
    message(FATAL_ERROR "--device cuda trained in a build without the CUDA backend")
  endif()
endif()
message(STATUS "ember-train end-to-end: test_acc ${acc}, exact resume OK")
