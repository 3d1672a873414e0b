#!/usr/bin/env bash
# Installs the Debian packages ember needs that are missing. Usage: scripts/deps.sh [bench|ci]
# ("bench" adds the reference libraries the benchmarks compare against; "ci" the formatter and
# the linter that .ci/run runs). dataset-fashion-mnist
# is the data of the main job (ember-train) and of its end-to-end test; libgloo-dev the CPU
# collectives of distributed/, iproute2 the network namespaces of its two-host test, python3-onnx
# the ONNX checker that tests/test_onnx.cpp runs on the files ember exports.
set -euo pipefail
pkgs=(build-essential cmake ninja-build ccache libeigen3-dev catch2 zlib1g-dev
      nlohmann-json3-dev libfmt-dev libcli11-dev libopenblas-dev dataset-fashion-mnist
      libgloo-dev iproute2 python3-onnx)
if [[ "${1:-}" == "bench" ]]; then pkgs+=(libtorch-dev); fi
if [[ "${1:-}" == "ci" ]]; then pkgs+=(clang-format-14 clang-tidy-14); fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
