# ember-train --amp (CTest "ember_train_amp"), on the cpu, a few seconds each:
#   - --amp bf16 and --amp fp16 train the MLP to a sane accuracy and say so in the JSON line
#     ("amp", and for fp16 the GradScaler's final "amp_scale" and its "skipped_steps");
#   - an fp16 run stopped mid-epoch and resumed ends with the uninterrupted run's numbers, bit
#     for bit (the scaler's scale and growth tracker are in the checkpoint);
#   - resuming it with another --amp names the setting.
# Usage: cmake -DTRAIN=path/to/ember-train -DWORK_DIR=scratch -P train_amp_e2e.cmake

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(common --model mlp --epochs 1 --train-subset 2000 --optimizer adam --seed 3 --threads 1)

include(${CMAKE_CURRENT_LIST_DIR}/train_util.cmake)  # run_train, expect_same_json

foreach(mode bf16 fp16)
  run_train(json ${common} --amp ${mode})
  string(JSON amp GET "${json}" amp)
  string(JSON acc GET "${json}" test_acc)
  string(JSON scale GET "${json}" amp_scale)
  if(NOT amp STREQUAL mode)
    message(FATAL_ERROR "--amp ${mode}: the JSON line says amp '${amp}': ${json}")
  endif()
  if(acc LESS 0.6)
    message(FATAL_ERROR "--amp ${mode}: test_acc ${acc} is not a sane accuracy: ${json}")
  endif()
  # bf16 has no scaler (scale 1); fp16 starts at 2^16 and moves by powers of two.
  if(mode STREQUAL "bf16" AND NOT scale EQUAL 1)
    message(FATAL_ERROR "--amp bf16 used loss scaling (amp_scale ${scale}): ${json}")
  endif()
  if(mode STREQUAL "fp16" AND scale EQUAL 1)
    message(FATAL_ERROR "--amp fp16 did not scale the loss (amp_scale ${scale}): ${json}")
  endif()
  set(${mode}_json "${json}")
endforeach()

# fp16: stopped at step 10 and resumed; the same numbers as the uninterrupted run.
run_train(stopped ${common} --amp fp16 --checkpoint-dir "${WORK_DIR}/ckpt" --stop-after 10)
run_train(resumed ${common} --amp fp16 --checkpoint-dir "${WORK_DIR}/ckpt" --resume)
expect_same_json("the --amp fp16 resumed run (vs uninterrupted)" "${fp16_json}" "${resumed}"
                 test_acc test_loss train_loss amp_scale skipped_steps steps)

execute_process(COMMAND "${TRAIN}" ${common} --amp bf16 --checkpoint-dir "${WORK_DIR}/ckpt"
                        --resume
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(rc EQUAL 0 OR NOT err MATCHES "is for --amp fp16, this run is --amp bf16")
  message(FATAL_ERROR "resuming an fp16 checkpoint with --amp bf16: expected an error naming "
                      "--amp, got ${rc}:\n${err}")
endif()
message(STATUS "ember-train --amp: bf16 ${bf16_json}\nfp16 ${fp16_json}\nexact fp16 resume OK")
