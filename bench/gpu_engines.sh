# Shared by bench/gpu_ab.sh, gpu_ab_lib.sh, gpu_ablate.sh and gpu_graph_trace.sh (sourced, from
# the repository root, on the GPU machine with .gpu/pack.tar.xz carried): their common options,
# the fp16 bench engines that bench/gpu_bench.py exports and builds (reused while the work dir
# holds them), and one timing.

models=distilbert,bert batches=1,32 iterations=300

# gpu_option FLAG VALUE: one of the common options (--models, --batches, --rounds, --iterations);
# returns 1 for any other flag.
gpu_option() {
  case "$1" in
    --models) models=$2 ;;
    --batches) batches=$2 ;;
    --rounds) rounds=$2 ;;
    --iterations) iterations=$2 ;;
    *) return 1 ;;
  esac
}

# Unpacks the binaries and builds or reuses the engines (no PyTorch timings); sets ing and work.
gpu_engines() {
  ing=$(scripts/gpu-check.sh --unpack-to /tmp/ingot-pack) || exit 1
  work=/tmp/ingot_gpu_bench
  python3 bench/gpu_bench.py --ingot "$ing" --models "$models" --batches "$batches" --skip-torch --no-kernel-time \
    --reuse-engines --iterations 20 --work "$work" >/dev/null 2>/tmp/gpu_engines_build.err ||
    { tail -5 /tmp/gpu_engines_build.err; exit 1; }
}

# bench_shapes MODEL BATCH: the --shapes of a bench engine at that batch.
bench_shapes() {
  if [ "$1" = resnet50 ]; then echo "pixel_values:${2}x3x224x224"
  else echo "input_ids:${2}x128,attention_mask:${2}x128"; fi
}

# gpu_median ENGINE SHAPES [NAME=VALUE...]: the GPU compute median (CUDA events the replayed
# graph records) of one `ingot bench` of $iterations runs, with the variables set when given; "failed"
# when the bench fails.
gpu_median() {
  env "${@:3}" "$ing" bench "$1" --shapes "$2" --iterations "$iterations" --duration 0 --warmup-ms 200 \
    --json /tmp/gpu_median.json >/dev/null 2>&1 || { echo "failed"; return; }
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.4f" % d["results"][0]["ingot"]["gpu_compute"]["median_ms"])' /tmp/gpu_median.json
}

# build_engine_with MODEL OUT NAME=VALUE...: OUT is MODEL's bench engine built again by the same
# `ingot build` command (the first line of its ingot_build.log) with the variables set; the log's
# tail and status 1 when that build fails.
build_engine_with() {
  local engine="$work/$1/model.fp16.ingot" out=$2 cmd i
  shift 2
  read -r -a cmd < <(head -1 "$(dirname "$engine")/ingot_build.log")
  for i in "${!cmd[@]}"; do [ "${cmd[$i]}" = "$engine" ] && cmd[$i]=$out; done
  env "$@" "${cmd[@]}" >/tmp/build_engine_with.log 2>&1 || { tail -3 /tmp/build_engine_with.log; return 1; }
}

