#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds (Release, warnings as errors), runs ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake --preset ci >/dev/null
cmake --build --preset ci -j "$(nproc)"
ctest --preset ci -j "$(nproc)"
