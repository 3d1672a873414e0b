#!/usr/bin/env bash
# The main job: installs what is missing (incl. Debian's dataset-fashion-mnist), builds
# ember-train, and trains the CNN on Fashion-MNIST with its defaults (a few minutes on 2 cores,
# about 91% test accuracy). Progress goes to stderr; the last line on stdout is the JSON
# summary. Arguments are passed on, e.g.:
#   bash scripts/main.sh --model mlp --optimizer sgd --epochs 5 --metrics mlp.csv
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target ember-train
./build/examples/ember-train "$@"
