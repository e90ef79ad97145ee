#!/usr/bin/env bash
# The SM clock, power, energy a run and what held the clock down while a bench engine runs for
# several seconds: `ingot bench --duration` prints them (its "GPU clocks" line, NVML sampled every
# 20 ms, cuda_clock_monitor.h): whether it runs at full clock or is held down by the power cap, a
# hardware slowdown or power brake, or temperature. With NAME=VALUE, a second engine built with
# those variables set (as gpu_ab.sh --at-build) is measured the same way, alternating with the
# first, ROUNDS times.
#
#   scripts/gpu-check.sh --pack                  # here, first: .gpu/pack.tar.xz
#   bench/gpu_clocks.sh [NAME=VALUE...] [--models bert] [--batches 32] [--seconds 8] [--rounds 2]
#                                                # on the GPU machine, .gpu carried
set -uo pipefail
cd "$(dirname "$0")/.."
switches=()
while [ $# -gt 0 ] && [[ "$1" == *=* ]]; do switches+=("$1"); shift; done
source bench/gpu_engines.sh
models=bert batches=32 seconds=8 rounds=2
while [ $# -gt 0 ]; do
  if [ "$1" = --seconds ]; then seconds=$2; shift 2; continue; fi
  gpu_option "$1" "${2:-}" || { echo "ingot: error: gpu_clocks.sh: unknown argument '$1'" >&2; exit 2; }
  shift 2
done
gpu_engines

nvidia-smi --query-gpu=name,power.limit,enforced.power.limit,clocks.max.sm,temperature.gpu --format=csv

# clock_profile ENGINE SHAPES: the GPU compute median and the clocks line of one long bench.
clock_profile() {
  "$ing" bench "$1" --shapes "$2" --iterations 1 --duration "$seconds" --warmup-ms 500 --json /tmp/gpu_clocks.json \
    >/tmp/gpu_clocks.log 2>&1 || { echo "bench failed: $(tail -1 /tmp/gpu_clocks.log)"; return; }
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.4f ms median;" % d["results"][0]["ingot"]["gpu_compute"]["median_ms"], end=" ")' /tmp/gpu_clocks.json
  grep "^GPU clocks" /tmp/gpu_clocks.log | sed 's/^GPU clocks, shape 1: //'
}

for m in ${models//,/ }; do
  engine="$work/$m/model.fp16.ingot"
  [ -f "$engine" ] || { echo "$m: no engine"; continue; }
  engine_b=""
  if [ ${#switches[@]} -gt 0 ]; then
    engine_b="$engine.B"
    build_engine_with "$m" "$engine_b" "${switches[@]}" || { echo "$m: B build failed"; engine_b=""; }
  fi
  for b in ${batches//,/ }; do
    shapes=$(bench_shapes "$m" "$b")
    for r in $(seq "$rounds"); do
      echo "$m b$b round $r, engine as built: $(clock_profile "$engine" "$shapes")"
      [ -n "$engine_b" ] && echo "$m b$b round $r, built with ${switches[*]}: $(clock_profile "$engine_b" "$shapes")"
    done
  done
done
