#!/usr/bin/env bash
# The one prepared script for a machine with an NVIDIA GPU (DESIGN.md "Devices and the CUDA
# simulator"): builds the real CUDA backend for that GPU's architecture, runs every CUDA test and
# the GPU benchmarks, and writes the logs and the result table under $OUT (default ./gpu-out).
#
#   bash bench/gpu.sh            # on the GPU machine, from the repository root
#
# It needs cmake >= 3.25, a C++17 compiler, nvcc, Eigen 3.4, zlib and Catch2 2.x (Debian:
# scripts/deps.sh); without Catch2 it builds and runs the benchmarks only.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
log() { echo "== [$(date +%T)] $*" | tee -a "$OUT/summary.txt"; }

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
  -DCMAKE_CUDA_ARCHITECTURES="${arch}" -DEMBER_BUILD_TESTS=${tests} -DEMBER_BUILD_EXAMPLES=OFF \
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

./build-gpu/bench/bench_norm_cuda > "$OUT/bench_norm_cuda.txt" 2>&1
log "bench_norm_cuda: exit $?"
cat "$OUT/bench_norm_cuda.txt" | tee -a "$OUT/summary.txt"
