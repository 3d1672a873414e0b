#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target ember-demo
./build/examples/ember-demo "$@"
