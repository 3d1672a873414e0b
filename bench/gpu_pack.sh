#!/usr/bin/env bash
# Builds the real CUDA backend on a machine without a GPU (nvcc compiles and links here) and packs
# what `bash bench/gpu.sh --prebuilt` needs on the GPU machine into .gpu-carry/ (git-ignored):
#   ember-gpu.tar.xz   libember, ember_tests, ember-train and the GPU benchmarks, stripped, at
#                      their build-tree paths (unpacked into build-gpu/ there)
#   lib/               the shared libraries they need that are neither the system's nor CUDA's
#                      (Debian's libgloo and what it links), found with ldd; they come last in
#                      the search path, after the GPU machine's own
#   fashion-mnist/     the main job's data (Debian's dataset-fashion-mnist)
#   source_dir, built_on
# cuBLAS is linked dynamically (EMBER_CUBLAS_STATIC=OFF): the GPU machine's libcublas.so.13,
# libcudnn.so.9 and libnccl.so.2 are used, which keeps the pack small enough to carry.
#
#   bash bench/gpu_pack.sh [ARCH, default 90a: Hopper with wgmma, GEMM rung 9]
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:-90a}
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=real \
  -DCMAKE_CUDA_ARCHITECTURES="$arch" -DEMBER_CUBLAS_STATIC=OFF -DEMBER_BUILD_TESTS=ON \
  -DEMBER_BUILD_EXAMPLES=ON > /dev/null
cmake --build build-gpu -j "$(nproc)" --target ember ember_tests ember-train bench_cuda \
  bench_gemm_cuda bench_conv_cuda bench_norm_cuda bench_ddp
rm -rf .gpu-carry
mkdir -p .gpu-carry/lib .gpu-carry/stage
files=(libember.so libember.so.0 "libember.so.$(sed -n 's/^project(ember VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)"
       tests/ember_tests examples/ember-train bench/bench_cuda bench/bench_gemm_cuda
       bench/bench_conv_cuda bench/bench_norm_cuda bench/bench_ddp)
for f in "${files[@]}"; do
  mkdir -p ".gpu-carry/stage/$(dirname "$f")"
  cp -P "build-gpu/$f" ".gpu-carry/stage/$f"
  [ -L ".gpu-carry/stage/$f" ] || strip --strip-unneeded ".gpu-carry/stage/$f"
done
tar -cJf .gpu-carry/ember-gpu.tar.xz -C .gpu-carry/stage .
rm -rf .gpu-carry/stage
# Libraries outside the system's and CUDA's own: Debian's builds that the GPU machine lacks.
for f in build-gpu/libember.so build-gpu/tests/ember_tests build-gpu/bench/bench_ddp; do
  ldd "$f"
done | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -E 'libgloo|libhiredis|libibverbs|libnl-|libfmt' | xargs -r cp -L -t .gpu-carry/lib
mkdir -p .gpu-carry/fashion-mnist
cp /usr/share/datasets/fashion-mnist/*.gz .gpu-carry/fashion-mnist/
echo "$PWD" > .gpu-carry/source_dir
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo +changes), sm_$arch, $(date -u +%F)" \
  > .gpu-carry/built_on
grep -qx '/.gpu-carry/' .gitignore || echo '/.gpu-carry/' >> .gitignore
du -sh .gpu-carry .gpu-carry/*
