#!/usr/bin/env bash
# The CUDA speed table with every PyTorch mode on every row, in one device call: on a machine of
# several GPUs (nvidia-h200-x4), one bench/gpu_bench.py per model, each on a GPU and a share of
# the CPU cores of its own, all at once, then their results merged into one table. Each row's
# ingot figure and its peers' come from one process on one GPU. max-autotune compiles for minutes
# a model and shape (105-270 s), so four models' every mode took more than a call's ten minutes on
# one GPU; split over four they fit. On the GPU machine, .gpu carried:
#
#   scripts/gpu-check.sh --pack                                  # here, first
#   scripts/gpu-table.sh [--models distilbert,bert,distilgpt2,resnet50] [--modes eager,...]
#                        [--budget 470] [--check] [--idle-ms MS] [--io-precision fp16]
#
# An item of --models is a model or MODEL:BATCH[/BATCH...] (its shapes in one process of their own:
# resnet50:1,resnet50:32 spreads a model whose max-autotune compiles are long over two GPUs;
# bert:2/4/8/16 times the batches between the targets' two). Items go to the GPUs in turn; a GPU with
# more than one runs them one after another within its --budget.
# --check runs scripts/gpu-check.sh on GPU 0 first (its model starts after it; put the quickest
# model first). --budget is each process's --time-budget in seconds.
# --idle-ms MS: every side idles MS before each timed run (gpu_bench.py --idle-ms: the latency of
# requests that arrive apart, the GPU at its full clock; back to back, the default, batch 32 holds
# the board at its power limit).
# --io-precision fp16: ingot's engines take and give float16 where the model has float32 (gpu_bench.py
# --io-precision), as PyTorch's fp16 models do. Results go to $OUT:
# bench.json (merged), bench-logs.tgz (each process's log and stderr, its own json); the tail of
# the output is the check's summary line and the merged table.
set -uo pipefail
cd "$(dirname "$0")/.."
models=distilbert,bert,distilgpt2,resnet50 modes=eager,default,reduce-overhead,max-autotune budget=470 check=0 bench_opts=()
while [ $# -gt 0 ]; do
  case "$1" in
    --models) models=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --check) check=1; shift ;;
    --idle-ms) bench_opts+=(--idle-ms "$2"); shift 2 ;;
    --io-precision) bench_opts+=(--io-precision "$2"); shift 2 ;;
    *) echo "ingot: error: gpu-table.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
out=${OUT:-$(mktemp -d)}
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
[ "$gpus" -ge 1 ] || { echo "ingot: error: gpu-table.sh: no GPU found by nvidia-smi" >&2; exit 1; }
ing=$(scripts/gpu-check.sh --unpack-to /tmp/ingot-pack) || exit 1
IFS=, read -ra list <<<"$models"
per_gpu=()
for i in "${!list[@]}"; do
  g=$((i % gpus))
  per_gpu[g]="${per_gpu[g]:+${per_gpu[g]},}${list[i]}"
done
cores=$(nproc)
share=$((cores / gpus))
# nvidia-smi numbers GPUs in PCI bus order; CUDA does the same with CUDA_DEVICE_ORDER=PCI_BUS_ID,
# so gpu_bench.py's clock samples (nvidia-smi -i) and its CUDA device are one board.
export CUDA_DEVICE_ORDER=PCI_BUS_ID
pids=()
for g in "${!per_gpu[@]}"; do
  (
    cpus="$((g * share))-$((g * share + share - 1))"
    b=$budget start=$SECONDS
    if [ "$g" = 0 ] && [ "$check" = 1 ]; then  # the check's time comes out of this GPU's budget
      # Its own output folder: the check packs and removes the logs in its folder when it ends.
      mkdir -p "$out/check"
      CUDA_VISIBLE_DEVICES=0 OUT="$out/check" taskset -c "$cpus" timeout 200 scripts/gpu-check.sh --from-pack \
        >"$out/check.log" 2>&1
    fi
    # Each process its own inductor and Triton caches, and compile workers for its own cores.
    export TORCHINDUCTOR_CACHE_DIR=/tmp/ingot_gpu_table_$g/inductor TRITON_CACHE_DIR=/tmp/ingot_gpu_table_$g/triton
    export TORCHINDUCTOR_COMPILE_THREADS=$share
    # Whole models in one process (max-autotune after every model's other modes), then the
    # single shapes, one process each.
    IFS=, read -ra items <<<"${per_gpu[g]}"
    whole=() k=0
    for it in "${items[@]}"; do [ "${it#*:}" = "$it" ] && whole+=("$it"); done
    runs=()
    [ ${#whole[@]} -gt 0 ] && runs+=("$(IFS=,; echo "${whole[*]}"):")
    for it in "${items[@]}"; do [ "${it#*:}" != "$it" ] && runs+=("$it"); done
    for r in "${runs[@]}"; do
      left=$((b - SECONDS + start))
      [ "$left" -gt 30 ] || break
      m=${r%%:*} bs=${r#*:}
      CUDA_VISIBLE_DEVICES=$g taskset -c "$cpus" timeout $((left + 90)) python3 bench/gpu_bench.py --ingot "$ing" \
        --modes "$modes" --models "$m" ${bs:+--batches "${bs//\//,}"} --check-accuracy --time-budget "$left" "${bench_opts[@]}" \
        --work "/tmp/ingot_gpu_table_$g" --fresh --json "$out/part${g}_$k.json" >"$out/part${g}_$k.log" 2>"$out/part${g}_$k.err"
      k=$((k + 1))
    done
  ) &
  pids+=($!)
done
wait "${pids[@]}"
[ "$check" = 1 ] && tail -3 "$out/check.log"
parts=$(ls "$out"/part*.json 2>/dev/null)
[ -n "$parts" ] || { echo "ingot: error: gpu-table.sh: no process wrote its results (see bench-logs.tgz)" >&2; }
[ -n "$parts" ] && python3 bench/gpu_bench.py --merge $parts --json "$out/bench.json" | tail -c 6000
(cd "$out" && tar -czf bench-logs.tgz part* check.log 2>/dev/null && rm -f part* check.log)
