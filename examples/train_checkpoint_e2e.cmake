# ember-train --checkpoint-segments (CTest "ember_train_checkpoint"), on the cpu, seconds each:
#   - the MLP in 3 segments and the CNN in 4 train to exactly the numbers of the plain runs
#     (recomputation changes no bit), and the JSON line says how many segments;
#   - more segments than the model has modules is a usage error (exit 2) naming both.
# Usage: cmake -DTRAIN=path/to/ember-train -DWORK_DIR=scratch -P train_checkpoint_e2e.cmake

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
include(${CMAKE_CURRENT_LIST_DIR}/train_util.cmake)  # run_train, expect_same_json

foreach(case "mlp;3;2000" "cnn;4;320")
  list(GET case 0 model)
  list(GET case 1 segments)
  list(GET case 2 subset)
  set(common --model ${model} --epochs 1 --train-subset ${subset} --optimizer adam --seed 5
             --threads 1)
  run_train(plain ${common})
  run_train(ck ${common} --checkpoint-segments ${segments})
  expect_same_json("--model ${model} --checkpoint-segments ${segments} (vs plain)" "${plain}"
                   "${ck}" test_acc test_loss train_loss train_acc steps)
  string(JSON got GET "${ck}" checkpoint_segments)
  if(NOT got EQUAL segments)
    message(FATAL_ERROR "the JSON line says checkpoint_segments ${got}, not ${segments}: ${ck}")
  endif()
endforeach()

execute_process(COMMAND "${TRAIN}" --model mlp --epochs 1 --train-subset 64
                        --checkpoint-segments 7
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 2 OR NOT err MATCHES "--checkpoint-segments 7: the mlp has 6 modules")
  message(FATAL_ERROR "--checkpoint-segments 7 on the mlp: expected exit 2 naming the 6 modules, "
                      "got ${rc}:\n${err}")
endif()
message(STATUS "ember-train --checkpoint-segments: the same numbers as the plain runs")
