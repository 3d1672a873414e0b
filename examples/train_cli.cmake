# ember-train under bad input (CTest "ember_train_cli"), each case a tiny run of seconds:
#   - every numeric option refuses a bad value with a short message and exit status 2
#     ("--epochs must be a positive integer, got 'abc'"), as does an --epochs whose steps
#     overflow and a negative --seed;
#   - results that cannot be written are errors naming the file, exit status 1: --metrics
#     /dev/full, stdout on /dev/full, stderr on /dev/full; an unusable --checkpoint-dir is
#     found before the first epoch;
#   - --resume with another model or optimizer names the setting; a damaged metrics CSV names
#     the file and the line; an empty training set says so;
#   - --profile writes a Chrome trace of the recorded steps and prints the table; a trace that
#     cannot be written is an error naming it; a run too short to reach the steps says so;
#   - with stderr not a terminal, progress lines appear during an epoch, and "evaluating".
# Usage: cmake -DTRAIN=path/to/ember-train -DWORK_DIR=scratch -P train_cli.cmake
# (Fashion-MNIST from the default root, as the ember_train_e2e test.)

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(tiny --model mlp --epochs 1 --train-subset 128 --threads 1)

# Runs ember-train with ARGN; sets rc, out and err in the caller.
macro(train)
  execute_process(COMMAND "${TRAIN}" ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
endmacro()

# Expects exit status `status` and stderr matching `pattern`.
function(expect status pattern)
  execute_process(COMMAND "${TRAIN}" ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL status OR NOT err MATCHES "${pattern}")
    message(FATAL_ERROR "ember-train ${ARGN}: expected exit ${status} and '${pattern}', got "
                        "${rc}:\n${err}")
  endif()
  message(STATUS "ember-train ${ARGN}: ${rc}: ${err}")
endfunction()

# ---- the command line: short messages, exit status 2 --------------------------------------------
foreach(case
    "--epochs;abc;--epochs must be a positive integer, got 'abc'"
    "--epochs;0;--epochs must be a positive integer, got '0'"
    "--epochs;99999999999999999999;--epochs must be a positive integer, got '99999999999999999999' \\(too large\\)"
    "--batch-size;-3;--batch-size must be a positive integer, got '-3'"
    "--lr;nan;--lr must be a positive number, got 'nan'"
    "--lr;-1;--lr must be a positive number, got '-1'"
    "--weight-decay;inf;--weight-decay must be a non-negative number, got 'inf'"
    "--lr-gamma;2;--lr-gamma must be a number from 0 to 1, got '2'"
    "--lr-step;x;--lr-step must be a positive integer, got 'x'"
    "--warmup-steps;1.5;--warmup-steps must be a positive integer, got '1.5'"
    "--threads;0;--threads must be an integer from 1 to 4096, got '0'"
    "--seed;-1;--seed must be a non-negative integer \\(at most 18446744073709551615\\), got '-1'"
    "--seed;18446744073709551616;--seed must be a non-negative integer .*\\(too large\\)"
    "--num-workers;-1;--num-workers must be an integer from 0 to 1024, got '-1'"
    "--train-subset;1e3;--train-subset must be a positive integer, got '1e3'"
    "--stop-after;0;--stop-after must be a positive integer, got '0'")
  list(GET case 0 option)
  list(GET case 1 value)
  list(GET case 2 pattern)
  expect(2 "^ember-train: error: ${pattern}\n$" ${option} ${value})
endforeach()
# epochs x steps per epoch beyond int64: refused before any training, not a negative schedule.
expect(2 "--epochs 4611686018427387904 is too large: .* overflow the step counter"
       --model mlp --epochs 4611686018427387904 --train-subset 128 --threads 1)

# ---- outputs that cannot be written: exit status 1, the file named ------------------------------
expect(1 "ember-train: error: cannot write metrics to /dev/full: No space left on device"
       ${tiny} --metrics /dev/full)
execute_process(COMMAND "${TRAIN}" ${tiny} OUTPUT_FILE /dev/full ERROR_VARIABLE err
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 1 OR NOT err MATCHES "cannot write the result to stdout: No space left on device")
  message(FATAL_ERROR "stdout on /dev/full: expected an error, got ${rc}:\n${err}")
endif()
execute_process(COMMAND "${TRAIN}" ${tiny} OUTPUT_VARIABLE out ERROR_FILE /dev/full
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 1 OR NOT out MATCHES "\"test_acc\"")
  message(FATAL_ERROR "stderr on /dev/full: expected the JSON line and exit status 1, got ${rc}:"
                      "\n${out}")
endif()
# A checkpoint directory that cannot be made: refused before the first epoch.
file(WRITE "${WORK_DIR}/a_file" "in the way")
foreach(dir "${WORK_DIR}/a_file" "${WORK_DIR}/a_file/sub")
  train(${tiny} --checkpoint-dir "${dir}")
  if(NOT rc EQUAL 1 OR NOT err MATCHES "--checkpoint-dir ${dir}: cannot create the directory"
     OR err MATCHES "epoch 1/1")
    message(FATAL_ERROR "--checkpoint-dir ${dir}: expected an error before training, got "
                        "${rc}:\n${err}")
  endif()
endforeach()

# ---- resume: another model or optimizer, a damaged metrics file ---------------------------------
set(ckpt --checkpoint-dir "${WORK_DIR}/ckpt" --metrics "${WORK_DIR}/m.csv")
set(run2 --epochs 2 --train-subset 128 --threads 1)
train(--model mlp ${run2} ${ckpt} --stop-after 3)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the run to resume failed: ${rc}:\n${err}")
endif()
expect(1 "checkpoint .*/ckpt/last.safetensors is for --model mlp, this run is --model cnn"
       --model cnn ${run2} ${ckpt} --resume)
expect(1 "is for --optimizer adam, this run is --optimizer sgd"
       --model mlp --optimizer sgd ${run2} ${ckpt} --resume)
file(READ "${WORK_DIR}/m.csv" csv)
file(APPEND "${WORK_DIR}/m.csv" "x,1,2\n")
expect(1 "the metrics file .*/m.csv line 3: expected 8 comma-separated fields starting with the epoch number, got 'x,1,2'"
       --model mlp ${run2} ${ckpt} --resume)
file(READ "${WORK_DIR}/m.csv" csv_after)
if(NOT csv_after STREQUAL "${csv}x,1,2\n")
  message(FATAL_ERROR "a refused metrics file must be left as it was:\n${csv_after}")
endif()
file(WRITE "${WORK_DIR}/m.csv" "step,loss\n1,2\n")
expect(1 "the metrics file .*/m.csv line 1: expected the header 'epoch,step,"
       --model mlp ${run2} ${ckpt} --resume)

# ---- an empty training set ---------------------------------------------------------------------
# IDX files holding 0 images (plain, not gzip), next to the real test set.
set(empty "${WORK_DIR}/empty_data")
file(MAKE_DIRECTORY "${empty}")
execute_process(COMMAND sh -c
  "printf '\\000\\000\\010\\003\\000\\000\\000\\000\\000\\000\\000\\034\\000\\000\\000\\034' > train-images-idx3-ubyte && printf '\\000\\000\\010\\001\\000\\000\\000\\000' > train-labels-idx1-ubyte"
  WORKING_DIRECTORY "${empty}" RESULT_VARIABLE made)
if(NOT made EQUAL 0)
  message(FATAL_ERROR "could not write the empty IDX files")
endif()
set(root "$ENV{EMBER_FASHION_MNIST}")
if(root STREQUAL "")
  set(root /usr/share/datasets/fashion-mnist)
endif()
foreach(f t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz)
  file(CREATE_LINK "${root}/${f}" "${empty}/${f}" SYMBOLIC)
endforeach()
expect(1 "the training set is empty: the Fashion-MNIST files in .*/empty_data hold no training images"
       --model mlp --threads 1 --data-dir "${empty}")

# ---- --profile: a Chrome trace of steps 7 to 9, the table on stderr -----------------------------
expect(2 "--profile-steps must be an integer from 1 to 100000, got '0'" ${tiny} --profile-steps 0)
set(trace "${WORK_DIR}/trace.json")
train(--model mlp --epochs 1 --train-subset 160 --batch-size 16 --threads 1 --profile "${trace}"
      --profile-steps 3)
if(NOT rc EQUAL 0 OR NOT err MATCHES "profiled steps 7 to 9; Chrome trace in .*trace.json"
   OR NOT err MATCHES "Self host time total" OR NOT EXISTS "${trace}")
  message(FATAL_ERROR "--profile: expected a trace and the table, got ${rc}:\n${err}")
endif()
file(READ "${trace}" trace_text)
string(JSON n_events LENGTH "${trace_text}" traceEvents)
foreach(name "ProfilerStep#6" "ProfilerStep#8" "linear" "LinearBackward" "cpu::batched_gemm"
             "DataLoader.next" "Optimizer.step#Adam" "cross_entropy_loss")
  string(FIND "${trace_text}" "\"name\": \"${name}\"" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "--profile: no '${name}' event among the ${n_events} of ${trace}")
  endif()
endforeach()
string(FIND "${trace_text}" "ProfilerStep#5\"" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "--profile: the warm-up step is in the trace")
endif()
# A trace that cannot be written ends the run with an error naming it; a run too short says so.
expect(1 "profiler: export_chrome_trace: .*/no_dir/trace.json: cannot create the temporary file"
       --model mlp --epochs 1 --train-subset 160 --batch-size 16 --threads 1
       --profile "${WORK_DIR}/no_dir/trace.json" --profile-steps 3)
expect(0 "--profile: the run ended after 2 steps, before the profiled ones \\(steps 7 to 16\\); no trace written"
       ${tiny} --profile "${WORK_DIR}/short.json")

# ---- progress when stderr is not a terminal ----------------------------------------------------
train(--model mlp --epochs 1 --train-subset 640 --threads 1)
if(NOT rc EQUAL 0 OR NOT err MATCHES "epoch 1/1: 1/10 batches \\(10%\\), loss [0-9.]+, [0-9]+ samples/s, ETA"
   OR NOT err MATCHES "epoch 1/1: 9/10 batches \\(90%\\)"
   OR NOT err MATCHES "epoch 1/1: evaluating on 10000 test images")
  message(FATAL_ERROR "expected progress lines on a non-terminal stderr, got ${rc}:\n${err}")
endif()
message(STATUS "ember-train under bad input: OK")
