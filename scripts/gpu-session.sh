#!/usr/bin/env bash
# One call on the GPU machine that uses its time well: the GPU check, the speed table against
# PyTorch (bench/gpu_bench.py) and a per-op GPU profile of the benchmark engines. Results go to
# $OUT as few files (the device tool returns at most eight): gpu-check-logs.tgz, gpu_tests.json,
# bench.json, bench-logs.tgz, profile.txt. The tail of the output is the check's summary line,
# the speed table and the start of the profile.
#
#   scripts/gpu-check.sh --pack                      # here, first: .gpu/pack.tar.xz
#   scripts/gpu-session.sh [--modes eager,default,reduce-overhead] [--budget 360] [--models a,b]
#                          [--no-check] [--env NAME=VALUE]... [--inductor-cache]   # on the GPU machine, .gpu carried
# --env sets a variable for the ingot runs only (for an A/B of a switch such as INGOT_CUDA_PROFILE).
# --inductor-cache: torch.compile's caches (bench/gpu_bench.py --inductor-cache) start from
# .gpu/inductor-cache.tar.xz.part-* when the call carried them and go back as $OUT's parts of 15
# MB (copy those into .gpu/ for the next call, on a machine of the same kind): max-autotune,
# minutes of autotuning per model and shape, then loads its choices instead. Triton's own cache
# (every candidate it compiled) stays behind; a hit recompiles only the chosen kernels.
set -uo pipefail
cd "$(dirname "$0")/.."
modes=eager,default,reduce-overhead budget=360 models="" check=1 cache=""
envs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --modes) modes=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --no-check) check=0; shift ;;
    --env) envs+=("$2"); shift 2 ;;
    --inductor-cache) cache=/tmp/ingot-inductor-cache; shift ;;
    *) echo "ingot: error: gpu-session.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
out=${OUT:-$(mktemp -d)}
export OUT=$out
[ ${#envs[@]} -gt 0 ] && export "${envs[@]}"

[ "$check" = 1 ] && (timeout 180 scripts/gpu-check.sh --from-pack 2>&1 | tail -3)
ing=$(scripts/gpu-check.sh --unpack-to /tmp/ingot-pack) || exit 1
if [ -n "$cache" ]; then
  mkdir -p "$cache"
  if ls .gpu/inductor-cache.tar.xz.part-* >/dev/null 2>&1; then
    cat .gpu/inductor-cache.tar.xz.part-* | tar -xJ -C "$cache" && echo "inductor cache in: $(du -sh "$cache" | cut -f1)"
  fi
fi
timeout $((budget + 90)) python3 bench/gpu_bench.py --ingot "$ing" --modes "$modes" --check-accuracy \
  --time-budget "$budget" ${models:+--models "$models"} ${cache:+--inductor-cache "$cache"} \
  --json "$out/bench.json" >"$out/bench.log" 2>"$out/bench.err"
tail -c 5200 "$out/bench.log"

work=/tmp/ingot_gpu_bench
for c in "distilbert input_ids:1x128,attention_mask:1x128" "distilbert input_ids:32x128,attention_mask:32x128" \
         "bert input_ids:32x128,attention_mask:32x128" "distilgpt2 input_ids:1x128,attention_mask:1x128" \
         "resnet50 pixel_values:32x3x224x224"; do
  set -- $c
  [ -f "$work/$1/model.fp16.ingot" ] || continue
  echo "== $1 $2" >>"$out/profile.txt"
  INGOT_CUDA_PROFILE=1 timeout 90 "$ing" bench "$work/$1/model.fp16.ingot" --shapes "$2" --iterations 20 --duration 0 \
    --warmup-ms 50 >/dev/null 2>>"$out/profile.txt"
done
[ -f "$out/profile.txt" ] && head -c 3000 "$out/profile.txt"
tar -czf "$out/bench-logs.tgz" -C "$out" bench.log bench.err && rm -f "$out/bench.log" "$out/bench.err"
if [ -n "$cache" ]; then
  tar -cJf /tmp/inductor-cache.tar.xz -C "$cache" --exclude=./triton . &&
    split -b 15m -d /tmp/inductor-cache.tar.xz "$out/inductor-cache.tar.xz.part-" &&
    echo "inductor cache out: $(du -h /tmp/inductor-cache.tar.xz | cut -f1) in $(ls "$out"/inductor-cache.tar.xz.part-* | wc -l) part(s)"
fi
