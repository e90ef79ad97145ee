#!/usr/bin/env bash
# Where the time goes inside the CUDA graph, by ablation: for each op family, the bench engines
# (fp16, exported and built by bench/gpu_bench.py, reused while the work dir holds them) run with
# INGOT_CUDA_SKIP_OPS set to it and unset, alternating; the family's cost is the difference of the
# GPU compute medians. Nsight Compute times kernels one at a time, without the graph's overlap of
# one kernel's tail with the next one's launch; this measures what leaving a family out saves in
# the replayed graph. (The outputs of the skipped runs are wrong; only their time is used.)
#
#   scripts/gpu-check.sh --pack                                   # here, first: .gpu/pack.tar.xz
#   bench/gpu_ablate.sh [--families LayerNormalization,Attention.core,...] [--models distilbert,bert]
#                       [--batches 1,32] [--rounds 2] [--iterations 300]    # on the GPU machine
set -uo pipefail
cd "$(dirname "$0")/.."
families=LayerNormalization,Attention.core,Attention,FusedMatMul,EmbedLayerNorm
models=distilbert,bert batches=1,32 rounds=2 iterations=300
while [ $# -gt 0 ]; do
  case "$1" in
    --families) families=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --batches) batches=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --iterations) iterations=$2; shift 2 ;;
    *) echo "ingot: error: gpu_ablate.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
ing=$(scripts/gpu-check.sh --unpack-to /tmp/ingot-pack) || exit 1
work=/tmp/ingot_gpu_bench
python3 bench/gpu_bench.py --ingot "$ing" --models "$models" --batches "$batches" --skip-torch --no-kernel-time \
  --reuse-engines --iterations 20 --work "$work" >/dev/null 2>"/tmp/gpu_ablate_build.err" ||
  { tail -5 /tmp/gpu_ablate_build.err; exit 1; }

gpu_median() {  # ENGINE SHAPES [SKIP]: the GPU compute median of one `ingot bench`
  INGOT_CUDA_SKIP_OPS="${3:-}" "$ing" bench "$1" --shapes "$2" --iterations "$iterations" --duration 0 \
    --warmup-ms 200 --json /tmp/gpu_ablate.json >/dev/null 2>&1 || { echo "nan"; return; }
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.4f" % d["results"][0]["ingot"]["gpu_compute"]["median_ms"])' /tmp/gpu_ablate.json
}
median() { python3 -c 'import statistics,sys; v=[float(x) for x in sys.argv[1:] if x != "nan"]; print("%.4f" % statistics.median(v) if v else "nan")' "$@"; }

echo "In-graph cost of each op family (GPU compute median ms with it, without it, and the difference;"
echo "medians over $rounds alternating rounds of $iterations runs)"
echo
echo "| model | batch | op family | with ms | without ms | cost ms |"
echo "| --- | --: | --- | --: | --: | --: |"
for m in ${models//,/ }; do
  engine="$work/$m/model.fp16.ingot"
  [ -f "$engine" ] || { echo "| $m | - | no engine | | | |"; continue; }
  for b in ${batches//,/ }; do
    if [ "$m" = resnet50 ]; then shapes="pixel_values:${b}x3x224x224"
    else shapes="input_ids:${b}x128,attention_mask:${b}x128"; fi
    for f in ${families//,/ }; do
      with=() without=()
      for r in $(seq "$rounds"); do
        with+=("$(gpu_median "$engine" "$shapes")")
        without+=("$(gpu_median "$engine" "$shapes" "$f")")
      done
      a=$(median "${with[@]}") c=$(median "${without[@]}")
      echo "| $m | $b | $f | $a | $c | $(python3 -c "import sys; a,c=sys.argv[1:]; print('nan' if 'nan' in (a,c) else '%.4f' % (float(a)-float(c)))" "$a" "$c") |"
    done
  done
done
