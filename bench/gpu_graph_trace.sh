#!/usr/bin/env bash
# Where the time goes inside the replayed CUDA graph: every kernel node of the fp16 bench engines'
# graphs, with its duration and the gap before it, as the GPU ran them (Nsight Systems with
# --cuda-graph-trace=node; Nsight Compute, by contrast, serialises kernels and clears or replays
# caches, and INGOT_CUDA_PROFILE=1 runs without the graph). On the GPU machine, .gpu carried:
#
#   scripts/gpu-check.sh --pack                                        # here, first
#   bench/gpu_graph_trace.sh [--models distilbert,bert] [--batches 1,32] [--env NAME=VALUE]...
#                            [--at-build NAME=VALUE]...
#
# Prints, per model and batch, the per-kernel table of bench/graph_trace.py and keeps each
# trace as $OUT/trace_MODEL_BATCH.csv.gz (the device tool brings $OUT back). --at-build: a second
# engine per model built with the variables set (INGOT_DISABLE_PASSES=...: the graph without a
# pass, as bench/gpu_ab.sh --at-build builds it) is traced too, as trace_MODEL_BATCH_B.csv.gz.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_engines.sh
envs=() build_envs=()
while [ $# -gt 0 ]; do
  if [ "$1" = --env ]; then envs+=("$2"); shift 2; continue; fi
  if [ "$1" = --at-build ]; then build_envs+=("$2"); shift 2; continue; fi
  gpu_option "$1" "${2:-}" || { echo "ingot: error: gpu_graph_trace.sh: unknown argument '$1'" >&2; exit 2; }
  shift 2
done
out=${OUT:-$(mktemp -d)}
nsys=$(command -v nsys || ls /opt/nvidia/nsight-systems/*/bin/nsys /opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys \
  /usr/local/cuda/bin/nsys 2>/dev/null | head -1)
[ -n "$nsys" ] || { echo "ingot: error: gpu_graph_trace.sh: nsys (Nsight Systems) is not installed here" >&2; exit 1; }
gpu_engines
# nsys writes a .qdstrm and imports it with QdstrmImporter, which needs libdw (packed from here).
importer=$(ls "$(dirname "$(dirname "$nsys")")"/*/QdstrmImporter 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/ingot-pack/pack/lib/nsys${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
IFS=, read -ra ms <<<"$models"
IFS=, read -ra bs <<<"$batches"
# trace ENGINE MODEL BATCH NAME: one traced bench of the engine, its table and $OUT/trace_NAME.csv.gz.
trace() {
  local engine=$1 m=$2 b=$3 name=$4 rep=/tmp/graph_trace_$4
  env "${envs[@]}" "$nsys" profile --trace=cuda --cuda-graph-trace=node -o "$rep" --force-overwrite true \
    "$ing" bench "$engine" --shapes "$(bench_shapes "$m" "$b")" --iterations 30 --duration 0 --warmup-ms 30 \
    >/tmp/graph_trace.log 2>&1 || { tail -3 /tmp/graph_trace.log; return; }
  if [ ! -f "$rep.nsys-rep" ] && [ -n "$importer" ]; then "$importer" -i "$rep.qdstrm" >/dev/null 2>&1; fi
  [ -f "$rep.nsys-rep" ] || { echo "$name: nsys wrote no report (see /tmp/graph_trace.log)"; return; }
  "$nsys" stats --report cuda_gpu_trace --format csv -o "$rep" "$rep.nsys-rep" >/dev/null 2>&1
  gzip -c "${rep}_cuda_gpu_trace.csv" >"$out/trace_$name.csv.gz"
  echo "== $name"
  python3 bench/graph_trace.py "$out/trace_$name.csv.gz"
}
for m in "${ms[@]}"; do
  engine="$work/$m/model.fp16.ingot"
  [ -f "$engine" ] || { echo "$m: no engine"; continue; }
  engine_b=""
  if [ ${#build_envs[@]} -gt 0 ]; then
    engine_b="$engine.B"
    build_engine_with "$m" "$engine_b" "${build_envs[@]}" || { echo "$m: B build failed"; engine_b=""; }
  fi
  for b in "${bs[@]}"; do
    trace "$engine" "$m" "$b" "${m}_$b"
    [ -n "$engine_b" ] && trace "$engine_b" "$m" "$b" "${m}_${b}_B"
  done
done
