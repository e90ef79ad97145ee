#!/usr/bin/env bash
# The ping-pong FFN 1 prototype (bench/pingpong_bench.cu) and what feeds its products
# (bench/wgmma_rate_bench.cu) in one device call: each variant's check, CTA 0's timeline and the
# CTAs' spans, its time against cuBLASLt's (chains at the graph's clock and back to back), and
# the copies' rate beside wgmma for each ring depth (Little's law: bytes in flight over the rate
# is their latency). On the GPU machine, .gpu carried:
#
#   scripts/gpu-check.sh --pack                                   # here, first
#   bench/gpu_pingpong.sh [--variants "4 6"] [--shape ffn1]       # $OUT keeps the logs
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
variants="4 6" shape=ffn1
while [ $# -gt 0 ]; do
  case "$1" in
    --variants) variants=$2 ;;
    --shape) shape=$2 ;;
    *) echo "ingot: error: gpu_pingpong.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift 2
done
out=${OUT:-$(mktemp -d)}
ing=$(scripts/gpu-check.sh --unpack-to /tmp/ingot-pack) || exit 1
dir=$(dirname "$ing")

for v in $variants; do
  echo "== $shape, variant $v"
  timeout 90 "$dir/pingpong_bench" "$shape" --variant "$v" --rounds 2 --seconds 0.4 --trace 2>&1 |
    tee "$out/pingpong_${shape}_v$v.txt" | cut -c1-240
done
echo "== wgmma beside tensor-box copies, by ring depth (N 128 and 192 rows)"
for r in 1 2 3 4 6; do
  echo "-- ring $r"
  timeout 60 "$dir/wgmma_rate_bench" --iters 20000 --spread 3 --tensor --ring "$r" 2>&1 |
    tee "$out/wgmma_rate_ring$r.txt" | grep -E "copies alone|N 128 x2 rows, 2 wg|N 192 x1 rows, 2 wg \+"
done
