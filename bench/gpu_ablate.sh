#!/usr/bin/env bash
# Where the time goes inside the CUDA graph, by ablation: for each op family, the bench engines
# (fp16, exported and built by bench/gpu_bench.py, reused while the work dir holds them) run with
# INGOT_CUDA_SKIP_OPS set to it and unset, alternating; the family's cost is the difference of the
# GPU compute medians. Nsight Compute times kernels one at a time, without the graph's overlap of
# one kernel's tail with the next one's launch; this measures what leaving a family out saves in
# the replayed graph. (The outputs of the skipped runs are wrong; only their time is used.)
# --repeat: each family's kernels run twice instead (INGOT_CUDA_REPEAT_OPS), the cost again the
# difference. At batch 32 the GPU sits at its power limit, where leaving a kernel out also changes
# the data the later kernels multiply and so the board's power (BERT-base b32 without its
# embedding: 977 -> 683 mJ a run, the time 11 % lower for 8 us of kernel); a repeated kernel leaves
# the data as it was (for families that do not write over their inputs: EmbedLayerNorm, Attention).
#
#   scripts/gpu-check.sh --pack                                   # here, first: .gpu/pack.tar.xz
#   bench/gpu_ablate.sh [--families LayerNormalization,Attention.core,...] [--models distilbert,bert]
#                       [--batches 1,32] [--rounds 2] [--iterations 300] [--repeat]    # on the GPU machine
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_engines.sh
families=LayerNormalization,Attention.core,Attention,FusedMatMul,EmbedLayerNorm
rounds=2 repeat=0
while [ $# -gt 0 ]; do
  if [ "$1" = --repeat ]; then repeat=1; shift; continue; fi
  if [ "$1" = --families ]; then families=${2:-}
  else gpu_option "$1" "${2:-}" || { echo "ingot: error: gpu_ablate.sh: unknown argument '$1'" >&2; exit 2; }; fi
  shift 2
done
gpu_engines

median() { python3 -c 'import statistics,sys; v=[float(x) for x in sys.argv[1:] if x != "failed"]; print("%.4f" % statistics.median(v) if v else "nan")' "$@"; }

if [ "$repeat" = 1 ]; then
  variable=INGOT_CUDA_REPEAT_OPS other="twice ms"
  echo "In-graph cost of each op family (GPU compute median ms with its kernels once, twice, and the difference;"
else
  variable=INGOT_CUDA_SKIP_OPS other="without ms"
  echo "In-graph cost of each op family (GPU compute median ms with it, without it, and the difference;"
fi
echo "medians over $rounds alternating rounds of $iterations runs)"
echo
echo "| model | batch | op family | with ms | $other | cost ms |"
echo "| --- | --: | --- | --: | --: | --: |"
for m in ${models//,/ }; do
  engine="$work/$m/model.fp16.ingot"
  [ -f "$engine" ] || { echo "| $m | - | no engine | | | |"; continue; }
  for b in ${batches//,/ }; do
    shapes=$(bench_shapes "$m" "$b")
    for f in ${families//,/ }; do
      with=() without=()
      for r in $(seq "$rounds"); do
        with+=("$(gpu_median "$engine" "$shapes")")
        without+=("$(gpu_median "$engine" "$shapes" "$variable=$f")")
      done
      a=$(median "${with[@]}") c=$(median "${without[@]}")
      # cost: with - without (skipped), or twice - once (repeated); negative within the noise
      echo "| $m | $b | $f | $a | $c | $(python3 -c "import sys; a,c,rep=sys.argv[1:]; print('nan' if 'nan' in (a,c) else '%.4f' % ((float(c)-float(a)) if rep == '1' else (float(a)-float(c))))" "$a" "$c" "$repeat") |"
    done
  done
done
