#!/usr/bin/env bash
# ingot's own product (bench/ws_gemm_bench.cu) in one device call: its table against cuBLASLt,
# FFN 1 with a fast tanh, CTA 0's timeline for a shape, and where the warps of one variant wait,
# instruction by instruction (Nsight Compute's source page through bench/ncu_sass_stalls.py). On
# the GPU machine, .gpu carried:
#
#   scripts/gpu-check.sh --pack                                   # here, first
#   bench/gpu_ws_gemm.sh [--shape out] [--variant 6] [--top 25]   # $OUT keeps the logs
set -uo pipefail
cd "$(dirname "$0")/.."
shape=out variant=6 top=25
while [ $# -gt 0 ]; do
  case "$1" in
    --shape) shape=$2 ;;
    --variant) variant=$2 ;;
    --top) top=$2 ;;
    *) echo "ingot: error: gpu_ws_gemm.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift 2
done
out=${OUT:-$(mktemp -d)}
ing=$(scripts/gpu-check.sh --unpack-to /tmp/ingot-pack) || exit 1
bench="$(dirname "$ing")/ws_gemm_bench"
ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)

timeout 240 "$bench" >"$out/ws_gemm_table.txt" 2>&1
echo "table: exit $? ($(grep -c WRONG "$out/ws_gemm_table.txt") wrong)"
cut -c1-120 "$out/ws_gemm_table.txt"
echo "FFN 1 with GELU on tanh.approx: $(WS_FAST_TANH=1 timeout 60 "$bench" ffn1 6 2>&1 | cut -c1-150)"
echo "CTA 0's timeline, $shape variant $variant:"
WS_TRACE=1 timeout 60 "$bench" "$shape" "$variant" --no-time 2>&1 | grep -E "^  [ 0-9][0-9] |epilogue" | paste - - - - | head -8
if [ -z "$ncu" ]; then echo "no ncu here: no stall table"; exit 0; fi
timeout 200 "$ncu" --clock-control none -k regex:ws_gemm_kernel --section SourceCounters --section WarpStateStats \
  -o "$out/ws_gemm_$shape" -f "$bench" "$shape" "$variant" --no-time >/dev/null 2>&1
"$ncu" -i "$out/ws_gemm_$shape.ncu-rep" --page source --print-source sass --csv >"$out/ws_gemm_${shape}_sass.csv" 2>&1
python3 bench/ncu_sass_stalls.py "$out/ws_gemm_${shape}_sass.csv" --top "$top"
