#!/usr/bin/env bash
# The main job: installs what is missing (incl. Debian's dataset-fashion-mnist), builds
# ember-train, and trains the CNN on Fashion-MNIST with its defaults (a few minutes on 2 cores,
# about 91% test accuracy). Progress goes to stderr; the last line on stdout is the JSON
# summary. Arguments are passed on, e.g.:
#   bash scripts/main.sh --model mlp --optimizer sgd --epochs 5 --metrics mlp.csv
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
# --device cuda needs a CUDA build: the real backend (preset cuda, build-cuda) when a GPU and nvcc
# are here, else the CUDA simulator (preset sim, build-sim: the same kernels on the CPU, slowly).
preset=release
build=build
for ((i = 1; i <= $#; ++i)); do
  arg=${!i}
  next=$((i + 1))
  if [[ "$arg" == --device=cuda* ]] || { [[ "$arg" == --device ]] && [[ "${!next:-}" == cuda* ]]; }; then
    if nvidia-smi -L > /dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
      preset=cuda
      build=build-cuda
    else
      preset=sim
      build=build-sim
      echo "main.sh: no GPU here: --device cuda runs on the CUDA simulator (build-sim)" >&2
    fi
  fi
done
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)" --target ember-train
"./$build/examples/ember-train" "$@"
