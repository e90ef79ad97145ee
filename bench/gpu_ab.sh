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
source bench/gpu_engines.sh
rounds=3
while [ $# -gt 0 ]; do
  gpu_option "$1" "${2:-}" || { echo "ingot: error: gpu_ab.sh: unknown argument '$1'" >&2; exit 2; }
  shift 2
done
gpu_engines

echo "A/B of $switch (GPU compute median ms of $iterations runs; A unset, B set)"
for m in ${models//,/ }; do
  engine="$work/$m/model.fp16.ingot"
  [ -f "$engine" ] || { echo "$m: no engine"; continue; }
  for b in ${batches//,/ }; do
    shapes=$(bench_shapes "$m" "$b")
    line="$m b$b:"
    for r in $(seq "$rounds"); do
      line="$line  $(gpu_median "$engine" "$shapes") / $(gpu_median "$engine" "$shapes" "$switch")"
    done
    echo "$line"
  done
done
