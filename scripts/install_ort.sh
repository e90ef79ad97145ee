#!/usr/bin/env bash
# Installs ONNX Runtime for node (npm onnxruntime-node) into .deps/ort-node, the peer that
# `ingot bench --against ort` and `ingot compare --against ort` use when no python3 with
# onnxruntime is present. ingot itself never links ONNX Runtime.
#
# The package's install script tries to download extra binaries (CUDA/TensorRT EPs) and fails
# without network access; the CPU library for linux x64 ships inside the package
# (bin/napi-v*/linux/x64/libonnxruntime.so*), so scripts are skipped.
#
# Usage: scripts/install_ort.sh [VERSION]     (default 1.30.0)
set -euo pipefail
VERSION=${1:-1.30.0}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST=$ROOT/.deps/ort-node
command -v node >/dev/null || { echo "install_ort.sh: node is not installed (apt-get install nodejs npm)" >&2; exit 1; }
command -v npm >/dev/null || { echo "install_ort.sh: npm is not installed (apt-get install npm)" >&2; exit 1; }
mkdir -p "$DEST"
cd "$DEST"
[ -f package.json ] || echo '{"name":"ingot-ort-peer","private":true}' >package.json
npm install --ignore-scripts --no-audit --no-fund "onnxruntime-node@$VERSION"
so=$(ls "$DEST"/node_modules/onnxruntime-node/bin/napi-v*/linux/x64/libonnxruntime.so* 2>/dev/null | head -1 || true)
[ -n "$so" ] || { echo "install_ort.sh: no libonnxruntime.so for linux x64 in the package" >&2; exit 1; }
echo "libonnxruntime: $so"
node -e "const ort = require('$DEST/node_modules/onnxruntime-node'); console.log('onnxruntime-node loads; version ' + (ort.env && ort.env.versions ? JSON.stringify(ort.env.versions) : require('$DEST/node_modules/onnxruntime-node/package.json').version));"
echo "installed onnxruntime-node@$VERSION into $DEST"
