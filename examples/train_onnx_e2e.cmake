# ember-train --export-onnx (CTest "ember_train_onnx"), on the cpu, seconds each:
#   - the MLP and the CNN train briefly and are exported (verified inside ember-train against
#     its forward on 8 test images); the JSON line names the file, and with python3-onnx the
#     file passes onnx.checker with strict shape inference;
#   - a file in a directory that does not exist is a usage error (exit 2) before any training.
# Usage: cmake -DTRAIN=path/to/ember-train -DWORK_DIR=scratch [-DPYTHON=python3] -P train_onnx_e2e.cmake

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
include(${CMAKE_CURRENT_LIST_DIR}/train_util.cmake)  # run_train

foreach(model mlp cnn)
  set(path "${WORK_DIR}/${model}.onnx")
  run_train(json --model ${model} --epochs 1 --train-subset 256 --threads 1 --export-onnx "${path}")
  string(JSON got GET "${json}" onnx)
  if(NOT got STREQUAL path OR NOT EXISTS "${path}")
    message(FATAL_ERROR "--export-onnx ${path}: no file, or the JSON line says '${got}': ${json}")
  endif()
  if(PYTHON)
    execute_process(COMMAND "${PYTHON}" -c
                            "import onnx,sys; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)"
                            "${path}"
                    RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "onnx.checker refuses ${path}:\n${err}")
    endif()
  endif()
endforeach()

execute_process(COMMAND "${TRAIN}" --model mlp --epochs 1 --export-onnx "${WORK_DIR}/no/such/m.onnx"
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 2 OR NOT err MATCHES "the directory '.*/no/such' does not exist")
  message(FATAL_ERROR "--export-onnx into a missing directory: expected exit 2, got ${rc}:\n${err}")
endif()
if(PYTHON)
  message(STATUS "ember-train --export-onnx: verified files that onnx.checker accepts")
else()
  message(STATUS "ember-train --export-onnx: verified files (no python3-onnx: checker not run)")
endif()
