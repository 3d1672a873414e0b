#!/usr/bin/env bash
# The one prepared script for a machine with an NVIDIA GPU (DESIGN.md "Devices and the CUDA
# simulator"): builds the real CUDA backend for that GPU's architecture, runs every CUDA test and
# the GPU benchmarks, and writes the logs and the result table under $OUT (default ./gpu-out).
#
#   bash bench/gpu.sh            # on the GPU machine, from the repository root
#   bash bench/gpu.sh --device cpu   # the same table shape on a machine without a GPU: the CPU
#                                    # kernels against OpenBLAS and libtorch (bench/RESULTS.md)
#
# It needs cmake >= 3.25, a C++17 compiler, nvcc, Eigen 3.4, zlib and Catch2 2.x (Debian:
# scripts/deps.sh); without Catch2 it builds and runs the benchmarks only.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
log() { echo "== [$(date +%T)] $*" | tee -a "$OUT/summary.txt"; }

# --device cpu: the CPU build (EMBER_CUDA=off) and the CPU side of every row the GPU run prints:
# SGEMM against OpenBLAS, add and sum against memcpy, a conv layer and an Adam step against
# libtorch, softmax, layer_norm and cross-entropy against memcpy and libtorch, and the CNN's epoch
# against libtorch. Each program compares side by side in one run;
# OPENBLAS_NUM_THREADS=1 keeps libtorch's BLAS from oversubscribing the cores.
if [ "${1:-}" = "--device" ] && [ "${2:-}" = "cpu" ]; then
  export OPENBLAS_NUM_THREADS=1
  # OpenBLAS (and libtorch through it) picks its kernels from the CPU's model; where CPUID names
  # only a generic "Intel Xeon Processor", as on some VMs, it falls back to Prescott's SSE3 kernels
  # at a quarter of its speed, a reference nobody would compare against. Name the core from the
  # instruction set instead, unless the caller did.
  if [ -z "${OPENBLAS_CORETYPE:-}" ]; then
    if grep -qw avx512f /proc/cpuinfo; then
      export OPENBLAS_CORETYPE=SkylakeX
    elif grep -qw avx2 /proc/cpuinfo; then
      export OPENBLAS_CORETYPE=Haswell
    fi
  fi
  threads=$(nproc)
  log "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), ${threads} cores," \
      "$(grep -qw avx512f /proc/cpuinfo && echo AVX-512 || echo AVX2), OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-auto}"
  cmake -S . -B build-cpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=off \
    -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_EXAMPLES=OFF > "$OUT/configure.log" 2>&1 ||
    { log "configure failed"; tail -30 "$OUT/configure.log"; exit 1; }
  cmake --build build-cpu -j "$threads" --target bench_sgemm bench_elementwise bench_nn \
    bench_norm bench_train bench_train_ember > "$OUT/build.log" 2>&1 ||
    { log "build failed"; tail -40 "$OUT/build.log"; exit 1; }
  log "built"
  run() {  # run NAME COMMAND...: its output to $OUT/NAME.txt and the summary
    local name=$1
    shift
    "$@" > "$OUT/$name.txt" 2>&1
    log "$name: exit $?"
    tee -a "$OUT/summary.txt" < "$OUT/$name.txt"
  }
  run bench_sgemm ./build-cpu/bench/bench_sgemm 3
  run bench_elementwise ./build-cpu/bench/bench_elementwise 9
  run bench_nn ./build-cpu/bench/bench_nn "$threads" 7 10
  run bench_norm ./build-cpu/bench/bench_norm "$threads"
  # The CNN epoch: 100 batches of each framework, alternating, scaled to the epoch.
  run bench_train env MODELS=cnn THREADS="$threads" CNN_REPS=1 CNN_BATCHES=100 \
    OUT="$OUT/bench_train.jsonl" bash bench/run_bench_train.sh build-cpu
  log "done: full results in $OUT"
  exit 0
fi

# ---- the GPU run --------------------------------------------------------------------------------
# Every stage runs under `timeout` (the whole script ends in well under 10 minutes whatever
# hangs), and summary.txt ends with the short table.
#   --prebuilt: use the binaries bench/gpu_pack.sh built and packed on a machine without a GPU
#   (nvcc compiles and links there) instead of building here: .gpu-carry/ember-gpu.tar.xz is
#   unpacked into build-gpu/, the libraries it needs that are not CUDA's come from
#   .gpu-carry/lib, and cuBLAS, cuDNN and NCCL are this machine's own (found below). The
#   binaries' RPATHs and the tests' golden-file directory name the packing machine's source tree
#   (.gpu-carry/source_dir), which is linked to this checkout when that path is free.
prebuilt=0
[ "${1:-}" = "--prebuilt" ] && prebuilt=1
B=$PWD/build-gpu
stage_timeout() { timeout --kill-after=10 "$@"; }

nvidia-smi --query-gpu=name,compute_cap,memory.total,clocks.max.sm,driver_version --format=csv \
  > "$OUT/nvidia-smi.txt" 2>&1 || true
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
arch=${arch:-90}
[ "$arch" = 90 ] && arch=90a  # Hopper: the sm_90a target carries wgmma (GEMM rung 9)
log "GPU: $(head -2 "$OUT/nvidia-smi.txt" | tail -1)"
log "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"

if [ "$prebuilt" = 1 ]; then
  [ -f .gpu-carry/ember-gpu.tar.xz ] || { log "--prebuilt: .gpu-carry/ember-gpu.tar.xz not found (bash bench/gpu_pack.sh)"; exit 1; }
  mkdir -p "$B" && tar -xJf .gpu-carry/ember-gpu.tar.xz -C "$B" || { log "unpacking failed"; exit 1; }
  src=$(cat .gpu-carry/source_dir)
  if [ "$src" != "$PWD" ]; then
    if [ -e "$src" ]; then
      log "--prebuilt: $src exists and is not this checkout: golden files and RPATHs may not resolve"
    else
      mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"
    fi
  fi
  # cuBLAS, cuDNN and NCCL of this machine (a CUDA install or the pip wheels beside PyTorch).
  libdirs=$(find /usr/local /usr/lib /opt /usr/local/lib/python3* -maxdepth 8 \
              \( -name 'libcublas.so.13' -o -name 'libcudnn.so.9' -o -name 'libnccl.so.2' \) \
              2>/dev/null | xargs -r -n1 dirname | sort -u | tr '\n' ':')
  export LD_LIBRARY_PATH="${libdirs}${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$PWD/.gpu-carry/lib"
  log "prebuilt (built $(cat .gpu-carry/built_on)); libraries from ${libdirs:-nowhere}"
  ldd "$B/libember.so" > "$OUT/ldd.txt" 2>&1
  if grep -q "not found" "$OUT/ldd.txt"; then
    log "missing libraries: $(grep 'not found' "$OUT/ldd.txt" | tr -s ' \t\n' ' ')"
  fi
  tests=ON
  [ -x "$B/tests/ember_tests" ] || tests=OFF
else
  log "building for sm_${arch}"
  tests=ON
  if ! [ -f /usr/include/catch2/catch.hpp ] && ! [ -f /usr/local/include/catch2/catch.hpp ]; then
    tests=OFF
    log "Catch2 not found: building the benchmarks only"
  fi
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=real \
    -DCMAKE_CUDA_ARCHITECTURES="${arch}" -DEMBER_BUILD_TESTS=${tests} -DEMBER_BUILD_EXAMPLES=ON \
    > "$OUT/configure.log" 2>&1 || { log "configure failed"; tail -30 "$OUT/configure.log"; exit 1; }
  targets=(ember ember-train bench_cuda bench_gemm_cuda bench_conv_cuda bench_norm_cuda bench_ddp)
  [ "$tests" = ON ] && targets+=(ember_tests)
  cmake --build build-gpu -j "$(nproc)" --target "${targets[@]}" > "$OUT/build.log" 2>&1 || {
    log "build failed"; tail -40 "$OUT/build.log"; exit 1; }
  log "built"
fi

# The CUDA tests: every source file's [cuda] cases in a process of its own, four at a time, so
# that a crash or a hang (a kernel that faults leaves its process's context unusable) costs one
# file, not the run; a file that did not finish is then run case by case. cuda_tests.txt: one
# line per file or case, PASS / FAIL / CRASH (exit code).
cuda_tests() {
  local bin=$B/tests/ember_tests dir=$OUT/cuda_tests tests_start=$SECONDS
  mkdir -p "$dir"
  "$bin" -# --list-tags 2> /dev/null | grep -o '\[#[A-Za-z0-9_]*\]' | sort -u > "$dir/files.all"
  : > "$dir/files"
  while read -r f; do
    [ -n "$("$bin" -# "[cuda]$f" --list-test-names-only 2> /dev/null)" ] && echo "$f" >> "$dir/files"
  done < "$dir/files.all"
  run_one() {  # run_one LABEL SPEC: one process, its log, one result line
    local label=$1 spec=$2 rc
    timeout --kill-after=5 "${CUDA_TEST_TIMEOUT:-150}" "$bin" -# "$spec" -d yes \
      > "$dir/$label.log" 2>&1
    rc=$?
    if [ $rc = 0 ]; then echo "PASS $label"
    elif grep -q "test cases:.*failed" "$dir/$label.log" && [ $rc -lt 124 ]; then
      echo "FAIL $label ($(grep -m1 'test cases:' "$dir/$label.log"))"
    else echo "CRASH $label (exit $rc)"; fi
  }
  export -f run_one
  export bin dir
  sed 's/^\[#\(.*\)\]$/\1/' "$dir/files" |
    xargs -P 4 -I{} bash -c 'run_one "{}" "[cuda][#{}]"' > "$dir/by_file.txt"
  sort -o "$dir/by_file.txt" "$dir/by_file.txt"
  cp "$dir/by_file.txt" "$OUT/cuda_tests.txt"
  # Files that crashed or hung: case by case (names escaped for Catch2's test spec).
  grep '^CRASH' "$dir/by_file.txt" | awk '{print $2}' | while read -r f; do
    "$bin" -# "[cuda][#$f]" --list-test-names-only 2> /dev/null | grep . | while IFS= read -r name; do
      if [ $((SECONDS - tests_start)) -gt "${CUDA_TESTS_BUDGET:-300}" ]; then
        echo "SKIPPED $f: $name (the tests' time budget is spent)"
        continue
      fi
      local esc
      esc=$(printf '%s' "$name" | sed 's/[][\\,*"~]/\\&/g')
      run_one "$f.$(printf '%s' "$name" | tr -c 'A-Za-z0-9' '_' | cut -c1-60)" "$esc"
    done
  done >> "$OUT/cuda_tests.txt"
  local pass fail crash
  pass=$(grep -c '^PASS' "$OUT/cuda_tests.txt")
  fail=$(grep -c '^FAIL' "$OUT/cuda_tests.txt")
  crash=$(grep -c '^CRASH' "$OUT/cuda_tests.txt")
  local cases  # passed / run, over every log (Catch2's two forms of its last line)
  cases=$(cat "$dir"/*.log | awk '
    /^All tests passed/ { n = $(NF - 2); s += n; p += n }
    /^test cases:/ { s += $3; for (i = 4; i <= NF; ++i) if ($i == "passed") p += $(i - 1) }
    END { print p + 0 "/" s + 0 }')
  log "CUDA tests: $pass files or cases passed, $fail failed, $crash crashed or hung; cases passed $cases (cuda_tests.txt)"
  grep -v '^PASS' "$OUT/cuda_tests.txt" | tee -a "$OUT/summary.txt"
}
if [ "$tests" = ON ]; then
  cuda_tests
fi

bench() {  # bench NAME SECONDS COMMAND...: its output to $OUT/NAME.txt and to the summary
  local name=$1 secs=$2
  shift 2
  stage_timeout "$secs" "$@" > "$OUT/$name.txt" 2>&1
  log "$name: exit $?"
  tee -a "$OUT/summary.txt" < "$OUT/$name.txt"
}
bench bench_cuda 60 "$B/bench/bench_cuda"
bench bench_gemm_cuda 120 "$B/bench/bench_gemm_cuda" sizes ladder tunings
# Rung 9 (wgmma, not yet run on a GPU) in a process of its own: a fault there loses only its lines.
bench bench_gemm_wgmma 60 "$B/bench/bench_gemm_cuda" wgmma
bench bench_conv_cuda 60 "$B/bench/bench_conv_cuda"
bench bench_norm_cuda 60 "$B/bench/bench_norm_cuda"

# One Fashion-MNIST epoch of the CNN: ember-train on the GPU against PyTorch eager on the same
# GPU (bench/torch_cnn_epoch.py: the same network, optimizer, batch and normalisation).
data=${EMBER_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
[ -f "$data/train-images-idx3-ubyte.gz" ] || [ ! -f .gpu-carry/fashion-mnist/train-images-idx3-ubyte.gz ] ||
  data=$PWD/.gpu-carry/fashion-mnist
# cnn_epoch AMP: the epoch with ember-train --amp AMP, and PyTorch's with the same autocast (and
# GradScaler for fp16) when it has CUDA; prints ember / pytorch.
cnn_epoch() {
  local amp=$1
  stage_timeout 120 "$B/examples/ember-train" --device cuda --epochs 1 --amp "$amp" --data-dir "$data" \
    > "$OUT/cnn_epoch_ember_$amp.json" 2> "$OUT/cnn_epoch_ember_$amp.log"
  log "ember-train --device cuda --epochs 1 --amp $amp: exit $? -- $(tail -1 "$OUT/cnn_epoch_ember_$amp.json")"
  if ! python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2> /dev/null; then
    log "pytorch with CUDA not found: the CNN epoch (--amp $amp) has no reference"
    return
  fi
  stage_timeout 120 python3 bench/torch_cnn_epoch.py --device cuda --amp "$amp" --data-dir "$data" \
    > "$OUT/cnn_epoch_torch_$amp.json" 2> "$OUT/cnn_epoch_torch_$amp.log"
  log "pytorch CNN epoch, amp $amp: exit $? -- $(tail -1 "$OUT/cnn_epoch_torch_$amp.json")"
  python3 - "$OUT/cnn_epoch_ember_$amp.json" "$OUT/cnn_epoch_torch_$amp.json" "$amp" << 'PY' 2>&1 | tee -a "$OUT/summary.txt"
import json, sys
e = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
t = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
print(f"CNN epoch, amp {sys.argv[3]}: ember {e['train_seconds']:.2f} s (test_acc {e['test_acc']}, "
      f"{e['skipped_steps']} skipped steps), pytorch {t['train_seconds']:.2f} s, "
      f"ember / pytorch {e['train_seconds'] / t['train_seconds']:.2f}"
      + (" (target <= 1)" if sys.argv[3] == "none" else ""))
PY
}
if [ -f "$data/train-images-idx3-ubyte.gz" ]; then
  cnn_epoch none
  cnn_epoch fp16  # float16 mixed precision (autocast + GradScaler) in both frameworks
  # The profiler on the GPU: 5 CNN steps with device times (core/profiler.h), the trace and the
  # table by device time kept under $OUT.
  stage_timeout 60 "$B/examples/ember-train" --device cuda --epochs 1 --train-subset 1280 --data-dir "$data" \
    --profile "$OUT/cnn_trace_cuda.json" --profile-steps 5 \
    > "$OUT/cnn_profile.json" 2> "$OUT/cnn_profile.log"
  log "ember-train --device cuda --profile: exit $? -- $(grep -m1 'profiled steps' "$OUT/cnn_profile.log")"
  grep -A 26 'profiled steps' "$OUT/cnn_profile.log" | tee -a "$OUT/summary.txt"
else
  log "Fashion-MNIST not found in $data (set EMBER_FASHION_MNIST): the CNN epoch is skipped"
fi

# NCCL world size 1 through the whole DDP path (ProcessGroupNCCL, cuda tensors): the DDP
# gradients are validated against a plain step's, then DDP's cost per step is timed.
bench bench_ddp_nccl 90 "$B/bench/bench_ddp" --backend nccl --device cuda

# compute-sanitizer (memcheck, then racecheck) over two test files' kernels, where the tool runs:
# the GPU's own view of what the simulator's detectors check in CI.
if [ "$tests" = ON ] && command -v compute-sanitizer > /dev/null; then
  for tool in memcheck racecheck; do
    stage_timeout 90 compute-sanitizer --tool "$tool" --error-exitcode 3 \
      "$B/tests/ember_tests" -# "[cuda][#test_cuda_norm],[cuda][#test_cuda_reduce],[cuda][#test_cuda_gemm]" \
      > "$OUT/sanitizer_$tool.txt" 2>&1
    log "compute-sanitizer --tool $tool (test_cuda_norm, test_cuda_reduce, test_cuda_gemm): exit $? -- $(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer_$tool.txt")"
  done
fi

# The short table, last: the tests, each benchmark's result rows and the CNN epochs.
{
  echo
  echo "==== short table ===="
  grep -m1 '^== .*GPU:' "$OUT/summary.txt"
  grep -m1 '^== .*CUDA tests:' "$OUT/summary.txt"
  grep -h '%$' "$OUT/bench_cuda.txt" "$OUT/bench_norm_cuda.txt" 2> /dev/null
  grep -h -E '^(float32|bfloat16) +[0-9]+ ' "$OUT/bench_gemm_cuda.txt" 2> /dev/null
  grep -h -E '^wgmma' "$OUT/bench_gemm_wgmma.txt" 2> /dev/null
  grep -h -E ' (forward|backward) ' "$OUT/bench_conv_cuda.txt" 2> /dev/null
  grep -h '^CNN epoch' "$OUT/summary.txt"
  grep -h -E '^\| DDP, default' "$OUT/bench_ddp_nccl.txt" 2> /dev/null
  grep -h -E '^== .*compute-sanitizer' "$OUT/summary.txt"
} > "$OUT/short_table.txt"
cat "$OUT/short_table.txt" | tee -a "$OUT/summary.txt"
log "done: full results in $OUT"
