#!/usr/bin/env bash
# The CPU rows of docs/PERFORMANCE.md: full-size DistilBERT (fp32, bf16) and ResNet-50 (fp32),
# both exporters, engines with profiles, ingot against ONNX Runtime in the same run (alternating
# blocks), 2 threads. Weights are regenerated from their seed first (scripts/fill_weights.py).
#   bench/cpu_table.sh [OUT_DIR]        (default: a fresh temporary directory)
# Needs a build (build/ingot) and an ORT peer (scripts/install_ort.sh, or Python onnxruntime).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-$(mktemp -d)}
mkdir -p "$out"
py=/usr/bin/python3
text="--min-shapes input_ids:1x1,attention_mask:1x1 --opt-shapes input_ids:1x128,attention_mask:1x128 --max-shapes input_ids:8x128,attention_mask:8x128"
image="--min-shapes pixel_values:1x3x224x224 --opt-shapes pixel_values:1x3x224x224 --max-shapes pixel_values:8x3x224x224"
git log -1 --format='commit %h %cd' --date=iso
for ex in torchscript dynamo; do
  $py scripts/fill_weights.py bench/models/distilbert/model.$ex.onnx
  $py scripts/fill_weights.py bench/models/resnet50/model.$ex.onnx
  build/ingot build bench/models/distilbert/model.$ex.onnx -o "$out/db_$ex.ingot" $text
  build/ingot build bench/models/distilbert/model.$ex.onnx -o "$out/db_${ex}_bf16.ingot" --precision bf16 $text
  build/ingot build bench/models/resnet50/model.$ex.onnx -o "$out/r50_$ex.ingot" $image
done
for ex in torchscript dynamo; do
  echo "== DistilBERT $ex fp32"
  build/ingot bench "$out/db_$ex.ingot" --batch 1,8 --seq 12,128 --threads 2 --against ort --iterations 30 --duration 0
  echo "== DistilBERT $ex bf16 (against ORT fp32)"
  build/ingot bench "$out/db_${ex}_bf16.ingot" --batch 1 --seq 12,128 --threads 2 --against ort --iterations 40 --duration 0
  # Accuracy of bf16 arithmetic against the fp32 model (forced on: CPUs without AMX otherwise
  # compute bf16 engines' products in float32, see src/backends/cpu/bf16_products.h).
  for s in 12 128; do
    INGOT_CPU_BF16_PRODUCTS=on build/ingot compare "$out/db_${ex}_bf16.ingot" --against bench/models/distilbert/model.$ex.onnx \
      --shapes input_ids:1x$s,attention_mask:1x$s --threads 2 | grep -E '^\| (output|logits)|^(PASS|FAIL)' || true
  done
  echo "== ResNet-50 $ex fp32"
  build/ingot bench "$out/r50_$ex.ingot" --batch 1,8 --threads 2 --against ort --iterations 20 --duration 0
done
