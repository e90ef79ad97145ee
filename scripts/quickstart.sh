#!/usr/bin/env bash
# The main job on a fresh machine: install and build ingot, then take the bundled default model
# (a small randomly initialised DistilBERT classifier exported from PyTorch) end to end.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
model=examples/distilbert_tiny.onnx
echo "== ingot inspect $model"
build/ingot inspect "$model"
echo
echo "== ingot run $model (inputs from examples/distilbert_tiny_inputs.npz)"
build/ingot run "$model" --inputs examples/distilbert_tiny_inputs.npz --save-outputs build/distilbert_tiny_outputs.npz
echo
echo "== ingot run $model (random inputs, batch 4 x sequence 32)"
build/ingot run "$model" --shapes input_ids:4x32,attention_mask:4x32
