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
# libtorch, and the CNN's epoch against libtorch. Each program compares side by side in one run;
# OPENBLAS_NUM_THREADS=1 keeps libtorch's BLAS from oversubscribing the cores.
if [ "${1:-}" = "--device" ] && [ "${2:-}" = "cpu" ]; then
  export OPENBLAS_NUM_THREADS=1
  threads=$(nproc)
  log "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), ${threads} cores," \
      "$(grep -qw avx512f /proc/cpuinfo && echo AVX-512 || echo AVX2)"
  cmake -S . -B build-cpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=off \
    -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_EXAMPLES=OFF > "$OUT/configure.log" 2>&1 ||
    { log "configure failed"; tail -30 "$OUT/configure.log"; exit 1; }
  cmake --build build-cpu -j "$threads" --target bench_sgemm bench_elementwise bench_nn \
    bench_train bench_train_ember > "$OUT/build.log" 2>&1 ||
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
  # The CNN epoch: 100 batches of each framework, alternating, scaled to the epoch.
  run bench_train env MODELS=cnn THREADS="$threads" CNN_REPS=1 CNN_BATCHES=100 \
    OUT="$OUT/bench_train.jsonl" bash bench/run_bench_train.sh build-cpu
  log "done: full results in $OUT"
  exit 0
fi

nvidia-smi --query-gpu=name,compute_cap,memory.total,clocks.max.sm --format=csv \
  > "$OUT/nvidia-smi.txt" 2>&1 || true
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
arch=${arch:-90}
log "GPU: $(head -2 "$OUT/nvidia-smi.txt" | tail -1); building for sm_${arch}"

tests=ON
if ! [ -f /usr/include/catch2/catch.hpp ] && ! [ -f /usr/local/include/catch2/catch.hpp ]; then
  tests=OFF
  log "Catch2 not found: building the benchmarks only"
fi
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=real \
  -DCMAKE_CUDA_ARCHITECTURES="${arch}" -DEMBER_BUILD_TESTS=${tests} -DEMBER_BUILD_EXAMPLES=ON \
  > "$OUT/configure.log" 2>&1 || { log "configure failed"; tail -30 "$OUT/configure.log"; exit 1; }
cmake --build build-gpu -j "$(nproc)" > "$OUT/build.log" 2>&1 || {
  log "build failed"; tail -40 "$OUT/build.log"; exit 1; }
log "built"

if [ "$tests" = ON ]; then
  ./build-gpu/tests/ember_tests "[cuda]" > "$OUT/cuda_tests.log" 2>&1
  log "CUDA tests: exit $? -- $(tail -2 "$OUT/cuda_tests.log" | tr '\n' ' ')"
fi

./build-gpu/bench/bench_cuda > "$OUT/bench_cuda.txt" 2>&1
log "bench_cuda: exit $?"
cat "$OUT/bench_cuda.txt" | tee -a "$OUT/summary.txt"

./build-gpu/bench/bench_gemm_cuda > "$OUT/bench_gemm_cuda.txt" 2>&1
log "bench_gemm_cuda: exit $?"
cat "$OUT/bench_gemm_cuda.txt" | tee -a "$OUT/summary.txt"

./build-gpu/bench/bench_conv_cuda > "$OUT/bench_conv_cuda.txt" 2>&1
log "bench_conv_cuda: exit $?"
cat "$OUT/bench_conv_cuda.txt" | tee -a "$OUT/summary.txt"

./build-gpu/bench/bench_norm_cuda > "$OUT/bench_norm_cuda.txt" 2>&1
log "bench_norm_cuda: exit $?"
cat "$OUT/bench_norm_cuda.txt" | tee -a "$OUT/summary.txt"

# One Fashion-MNIST epoch of the CNN: ember-train on the GPU against PyTorch eager on the same
# GPU (bench/torch_cnn_epoch.py: the same network, optimizer, batch and normalisation).
data=${EMBER_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
# cnn_epoch AMP: the epoch with ember-train --amp AMP, and PyTorch's with the same autocast (and
# GradScaler for fp16) when it has CUDA; prints ember / pytorch.
cnn_epoch() {
  local amp=$1
  ./build-gpu/examples/ember-train --device cuda --epochs 1 --amp "$amp" --data-dir "$data" \
    > "$OUT/cnn_epoch_ember_$amp.json" 2> "$OUT/cnn_epoch_ember_$amp.log"
  log "ember-train --device cuda --epochs 1 --amp $amp: exit $? -- $(tail -1 "$OUT/cnn_epoch_ember_$amp.json")"
  if ! python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2> /dev/null; then
    log "pytorch with CUDA not found: the CNN epoch (--amp $amp) has no reference"
    return
  fi
  python3 bench/torch_cnn_epoch.py --device cuda --amp "$amp" --data-dir "$data" \
    > "$OUT/cnn_epoch_torch_$amp.json" 2> "$OUT/cnn_epoch_torch_$amp.log"
  log "pytorch CNN epoch, amp $amp: exit $? -- $(tail -1 "$OUT/cnn_epoch_torch_$amp.json")"
  python3 - "$OUT/cnn_epoch_ember_$amp.json" "$OUT/cnn_epoch_torch_$amp.json" "$amp" << 'PY' | tee -a "$OUT/summary.txt"
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
  ./build-gpu/examples/ember-train --device cuda --epochs 1 --train-subset 1280 --data-dir "$data" \
    --profile "$OUT/cnn_trace_cuda.json" --profile-steps 5 \
    > "$OUT/cnn_profile.json" 2> "$OUT/cnn_profile.log"
  log "ember-train --device cuda --profile: exit $? -- $(grep -m1 'profiled steps' "$OUT/cnn_profile.log")"
  grep -A 26 'profiled steps' "$OUT/cnn_profile.log" | tee -a "$OUT/summary.txt"
else
  log "Fashion-MNIST not found in $data (set EMBER_FASHION_MNIST): the CNN epoch is skipped"
fi

# NCCL world size 1 through the whole DDP path (ProcessGroupNCCL, cuda tensors): the DDP
# gradients are validated against a plain step's, then DDP's cost per step is timed.
./build-gpu/bench/bench_ddp --backend nccl --device cuda > "$OUT/bench_ddp_nccl.txt" 2>&1
log "bench_ddp --backend nccl --device cuda: exit $?"
cat "$OUT/bench_ddp_nccl.txt" | tee -a "$OUT/summary.txt"
