#!/usr/bin/env bash
# A/B of an environment switch on the GPU machine, in one binary: the fp16 bench engines
# (exported and built by bench/gpu_bench.py, reused while the work dir holds them) run with the
# switch unset and set, alternating, ROUNDS times per shape; each run is `ingot bench` with
# ITERATIONS timed runs, and the line printed is its GPU compute median (CUDA events around the
# graph replay). Alternating rounds, not one long run each, because a machine's clocks and
# neighbours drift by a percent or two within minutes.
#
#   scripts/gpu-check.sh --pack                  # here, first: .gpu/pack.tar.xz
#   bench/gpu_ab.sh NAME=VALUE [--models distilbert,bert] [--batches 1,32] [--rounds 3]
#                   [--iterations 300]           # on the GPU machine, .gpu carried
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] && [[ "$1" == *=* ]] || { echo "ingot: error: gpu_ab.sh: first argument must be NAME=VALUE" >&2; exit 2; }
switch=$1; shift
models=distilbert,bert batches=1,32 rounds=3 iterations=300
while [ $# -gt 0 ]; do
  case "$1" in
    --models) models=$2; shift 2 ;;
    --batches) batches=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --iterations) iterations=$2; shift 2 ;;
    *) echo "ingot: error: gpu_ab.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
ing=$(scripts/gpu-check.sh --unpack-to /tmp/ingot-pack) || exit 1
work=/tmp/ingot_gpu_bench
# Engines only: no PyTorch timings.
python3 bench/gpu_bench.py --ingot "$ing" --models "$models" --batches "$batches" --skip-torch --no-kernel-time \
  --reuse-engines --iterations 20 --work "$work" >/dev/null 2>"/tmp/gpu_ab_build.err" ||
  { tail -5 /tmp/gpu_ab_build.err; exit 1; }

gpu_median() {  # ENGINE SHAPES [ENV]: the GPU compute median of one `ingot bench`
  env ${3:+"$3"} "$ing" bench "$1" --shapes "$2" --iterations "$iterations" --duration 0 --warmup-ms 200 \
    --json /tmp/gpu_ab.json >/dev/null 2>&1 || { echo "failed"; return; }
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.4f" % d["results"][0]["ingot"]["gpu_compute"]["median_ms"])' /tmp/gpu_ab.json
}

echo "A/B of $switch (GPU compute median ms of $iterations runs; A unset, B set)"
for m in ${models//,/ }; do
  engine="$work/$m/model.fp16.ingot"
  [ -f "$engine" ] || { echo "$m: no engine"; continue; }
  for b in ${batches//,/ }; do
    if [ "$m" = resnet50 ]; then shapes="pixel_values:${b}x3x224x224"
    else shapes="input_ids:${b}x128,attention_mask:${b}x128"; fi
    line="$m b$b:"
    for r in $(seq "$rounds"); do
      line="$line  $(gpu_median "$engine" "$shapes") / $(gpu_median "$engine" "$shapes" "$switch")"
    done
    echo "$line"
  done
done
