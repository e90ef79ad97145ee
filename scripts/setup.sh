#!/usr/bin/env bash
# Installs everything ingot needs on a fresh Debian 12 machine, then configures and builds it.
# Why each package is here is in README.md ("Dependencies").
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake ninja-build g++ ccache pkg-config
  libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata
  libdnnl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev zlib1g-dev libicu-dev
  pybind11-dev python3-dev python3-numpy python3-pytest python3-onnx
)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# ONNX Runtime for node: the peer of `ingot bench/compare --against ort` (ingot never links it).
# Best effort: without it those two flags say so and their tests are skipped.
if [ ! -d .deps/ort-node/node_modules/onnxruntime-node ] && command -v npm >/dev/null; then
  scripts/install_ort.sh >/dev/null 2>&1 || echo "setup: could not install onnxruntime-node (bench --against ort will be unavailable)"
fi

build_type=${INGOT_BUILD_TYPE:-Release}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$build_type" >/dev/null
cmake --build build
