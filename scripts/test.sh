#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds (preset ci: the CUDA simulator under
# AddressSanitizer + UndefinedBehaviorSanitizer, -O1 -g1, warnings as errors, the benchmarks
# compiled too) and runs ctest with the simulator's racecheck on. Every CUDA kernel runs on the
# CPU there, under ASan, with shared-memory races reported.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake --preset ci >/dev/null
cmake --build --preset ci -j "$(nproc)"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
export EMBER_SIM_RACECHECK="${EMBER_SIM_RACECHECK:-1}"
ctest --preset ci -j "$(nproc)"
