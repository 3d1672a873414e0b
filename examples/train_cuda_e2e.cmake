# ember-train on a cuda device (CTest "ember_train_cuda", builds with EMBER_CUDA=sim or real): the
# CNN on the first 128 training images, batches of 32, four steps.
#   run A: all four steps on the cpu;
#   run B: two steps on cuda:0, stopped (its checkpoint written from the device), then resumed
#          with --device cpu for the last two.
# Checks: B ends with A's training loss within float32 tolerance (the device computes the first
# two steps in another order of additions), so data, model, optimizer and checkpoint all moved
# through the device and back. Without a device (a real build on a machine without a GPU) the
# test is reported as skipped. Then a profiled run on the device (--profile) must report device
# times.
# Usage: cmake -DTRAIN=path/to/ember-train -DWORK_DIR=scratch -P train_cuda_e2e.cmake

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(common --model cnn --epochs 1 --train-subset 128 --batch-size 32 --optimizer adam
           --lr 0.002 --seed 3 --threads 2)

set(RUN_TRAIN_SKIP_PATTERN "no such CUDA device")
include(${CMAKE_CURRENT_LIST_DIR}/train_util.cmake)  # run_train

run_train(stopped ${common} --device cuda --checkpoint-dir "${WORK_DIR}/b" --stop-after 2)
if(stopped STREQUAL "SKIPPED")
  return()
endif()
run_train(b ${common} --device cpu --checkpoint-dir "${WORK_DIR}/b" --resume)
run_train(a ${common} --device cpu --checkpoint-dir "${WORK_DIR}/a")
string(JSON loss_a GET "${a}" train_loss)
string(JSON loss_b GET "${b}" train_loss)
string(JSON steps_b GET "${b}" steps)
if(NOT steps_b EQUAL 4)
  message(FATAL_ERROR "the resumed run should end at step 4: ${b}")
endif()
# CMake's math is integer-only: compare the losses in units of 1e-4.
string(REGEX REPLACE "^([0-9]+)\\.([0-9][0-9][0-9][0-9]).*" "\\1\\2" ia "${loss_a}")
string(REGEX REPLACE "^([0-9]+)\\.([0-9][0-9][0-9][0-9]).*" "\\1\\2" ib "${loss_b}")
string(REGEX REPLACE "^0+([0-9])" "\\1" ia "${ia}")  # no leading zeros: 0.9876 -> 9876
string(REGEX REPLACE "^0+([0-9])" "\\1" ib "${ib}")
math(EXPR diff "${ia} - ${ib}")
if(diff LESS -2 OR diff GREATER 2)
  message(FATAL_ERROR "cuda-then-cpu training loss ${loss_b} differs from the cpu's ${loss_a} "
                      "by more than 2e-4")
endif()
message(STATUS "train_loss: cpu ${loss_a}, cuda then cpu ${loss_b}")

# The profiler on the device: 8 MLP steps on cuda:0, step 7 profiled; the table is sorted by
# device time and the trace has a device track (pid 1), both from the kernels' event timings.
execute_process(COMMAND "${TRAIN}" --model mlp --epochs 1 --train-subset 256 --batch-size 32
                        --threads 2 --device cuda --stop-after 8 --profile-steps 1
                        --profile "${WORK_DIR}/trace.json"
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT err MATCHES "profiled steps 7 to 7" OR NOT err MATCHES "Device total"
   OR NOT EXISTS "${WORK_DIR}/trace.json")
  message(FATAL_ERROR "--device cuda --profile: expected a trace and a table with device times, "
                      "got ${rc}:\n${err}")
endif()
file(READ "${WORK_DIR}/trace.json" trace)
string(FIND "${trace}" "\"cat\": \"device\", \"pid\": 1," at)
if(at EQUAL -1)
  message(FATAL_ERROR "--device cuda --profile: no device events in the trace")
endif()
message(STATUS "--device cuda --profile: the table has device times, the trace a device track")
