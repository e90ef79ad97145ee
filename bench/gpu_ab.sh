#!/usr/bin/env bash
# A/B of environment switches on the GPU machine, in one binary: the fp16 bench engines
# (exported and built by bench/gpu_bench.py, reused while the work dir holds them) run with the
# switches unset and set, alternating, ROUNDS times per shape; each run is `ingot bench` with
# ITERATIONS timed runs, and the line printed is its GPU compute median (CUDA events the
# replayed graph records). Alternating rounds, not one long run each, because a machine's clocks and
# neighbours drift by a percent or two within minutes. --at-build: the switch acts when the engine
# is built (INGOT_DISABLE_PASSES=fuse_x): B is a second engine built with it set, by the same
# `ingot build` command as A (the first line of the work dir's ingot_build.log).
#
#   scripts/gpu-check.sh --pack                  # here, first: .gpu/pack.tar.xz
#   bench/gpu_ab.sh NAME=VALUE [NAME=VALUE...] [--models distilbert,bert] [--batches 1,32] [--rounds 3]
#                   [--iterations 300] [--at-build]   # on the GPU machine, .gpu carried
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] && [[ "$1" == *=* ]] || { echo "ingot: error: gpu_ab.sh: first argument must be NAME=VALUE" >&2; exit 2; }
switches=()
while [ $# -gt 0 ] && [[ "$1" == *=* ]]; do switches+=("$1"); shift; done
switch="${switches[*]}"
source bench/gpu_engines.sh
rounds=3
at_build=0
while [ $# -gt 0 ]; do
  if [ "$1" = --at-build ]; then at_build=1; shift; continue; fi
  gpu_option "$1" "${2:-}" || { echo "ingot: error: gpu_ab.sh: unknown argument '$1'" >&2; exit 2; }
  shift 2
done
gpu_engines

echo "A/B of $switch (GPU compute median ms of $iterations runs; A unset, B set)"
for m in ${models//,/ }; do
  engine="$work/$m/model.fp16.ingot"
  [ -f "$engine" ] || { echo "$m: no engine"; continue; }
  engine_b=$engine b_switch=("${switches[@]}")
  if [ "$at_build" = 1 ]; then
    engine_b="$engine.B" b_switch=()
    build_engine_with "$m" "$engine_b" "${switches[@]}" || { echo "$m: B build failed"; continue; }
  fi
  for b in ${batches//,/ }; do
    shapes=$(bench_shapes "$m" "$b")
    line="$m b$b:"
    for r in $(seq "$rounds"); do
      line="$line  $(gpu_median "$engine" "$shapes") / $(gpu_median "$engine_b" "$shapes" "${b_switch[@]}")"
    done
    echo "$line"
  done
done
