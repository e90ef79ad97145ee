#!/usr/bin/env bash
# The GPU check: builds ingot with CUDA, runs the GPU tests (every CUDA kernel against the CPU
# reference, every model fixture of both exporters in fp32/fp16/bf16, engine files, memory,
# concurrency) and a CLI smoke test on a fixture, and prints as its last line
#   N passed, N failed, N skipped
#
#   scripts/gpu-check.sh              build here (after scripts/setup.sh) and check
#   scripts/gpu-check.sh --pack       build here and pack the binaries with the shared libraries a
#                                     bare CUDA machine lacks into .gpu/pack.tar.xz (no GPU needed)
#   scripts/gpu-check.sh --from-pack  on a GPU machine without ingot's build dependencies: unpack
#                                     .gpu/pack.tar.xz and check with it
#   scripts/gpu-check.sh --unpack-to DIR   unpack there and write DIR/ingot, a wrapper that runs
#                                     the packed CLI (for bench/gpu_bench.py --ingot DIR/ingot),
#                                     and DIR/gemm_ln_bench, DIR/ws_gemm_bench, DIR/layer_chain_bench, DIR/lt_sweep, DIR/pingpong_bench, DIR/wgmma_rate_bench likewise
# Extra arguments after the mode go to the test binary (e.g. --gtest_filter=GpuGemm.*).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
mode=build
case "${1:-}" in
  --pack) mode=pack; shift ;;
  --from-pack) mode=from-pack; shift ;;
  --unpack-to) mode=unpack; dest=$2; shift 2 ;;
esac

build_here() {
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  if ! cmake --build build --target help | grep -q ingot_gpu_tests; then
    echo "ingot: error: no CUDA toolkit found by CMake: the GPU check needs one" >&2
    exit 1
  fi
  cmake --build build -j"$(nproc)" --target ingot_cli ingot_gpu_tests gemm_ln_bench ws_gemm_bench layer_chain_bench lt_sweep pingpong_bench wgmma_rate_bench
}

if [ "$mode" = pack ]; then
  build_here
  rm -rf .gpu/pack && mkdir -p .gpu/pack/lib
  cp build/ingot build/libingot.so build/tests/ingot_gpu_tests build/gemm_ln_bench build/ws_gemm_bench build/layer_chain_bench build/lt_sweep build/pingpong_bench build/wgmma_rate_bench .gpu/pack/
  # Libraries of this machine's distribution that a bare CUDA image lacks; the CUDA libraries
  # themselves (cudart, cuBLASLt, cuDNN) are the GPU machine's own.
  for lib in $(ldd build/ingot build/tests/ingot_gpu_tests build/libingot.so | awk '/=>/ {print $3}' | sort -u); do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libgcc_s.so*|libstdc++.so*|libcuda*|libcublas*|libcudnn*|libingot.so) ;;
      *) cp -L "$lib" .gpu/pack/lib/ ;;
    esac
  done
  # Nsight Systems' importer on the GPU machine lacks libdw (bench/gpu_graph_trace.sh): this
  # machine's copy, in a folder of its own so that nothing else loads it.
  mkdir -p .gpu/pack/lib/nsys
  for lib in libdw.so.1 libelf.so.1; do
    for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib; do
      [ -e "$d/$lib" ] && { cp -L "$d/$lib" .gpu/pack/lib/nsys/; break; }
    done
  done
  tar -C .gpu -cJf .gpu/pack.tar.xz pack
  rm -rf .gpu/pack
  echo "packed .gpu/pack.tar.xz ($(du -h .gpu/pack.tar.xz | cut -f1))"
  exit 0
fi

if [ "$mode" = from-pack ] || [ "$mode" = unpack ]; then
  [ -f .gpu/pack.tar.xz ] || { echo "ingot: error: .gpu/pack.tar.xz is missing (make it with --pack)" >&2; exit 1; }
  if [ "$mode" = unpack ]; then work=$dest; mkdir -p "$work"; else work=$(mktemp -d); fi
  tar -C "$work" -xJf .gpu/pack.tar.xz
  bin="$work/pack"
  # The CUDA libraries: the toolkit's, else the ones PyTorch's wheels bring.
  libs="$bin:$bin/lib"
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do [ -d "$d" ] && libs="$libs:$d"; done
  py=$(command -v python3 || true)
  if [ -n "$py" ]; then
    site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null || true)
    for d in "$site"/nvidia/cudnn/lib "$site"/nvidia/cublas/lib "$site"/nvidia/cu13/lib "$site"/nvidia/cuda_runtime/lib; do
      [ -d "$d" ] && libs="$libs:$d"
    done
  fi
  export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  if [ "$mode" = unpack ]; then
    # Wrappers that run the packed binaries with their libraries (bench/gpu_bench.py --ingot DIR/ingot).
    for exe in ingot gemm_ln_bench ws_gemm_bench layer_chain_bench lt_sweep pingpong_bench wgmma_rate_bench; do
      printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "$LD_LIBRARY_PATH" "$bin/$exe" >"$work/$exe"
      chmod +x "$work/$exe"
    done
    echo "$work/ingot"
    exit 0
  fi
  ingot="$bin/ingot"
  tests="$bin/ingot_gpu_tests"
else
  build_here
  ingot=build/ingot
  tests=build/tests/ingot_gpu_tests
fi

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"

# 1. The GPU tests (gtest; JSON report counted below).
set +e
INGOT_SOURCE_DIR="$root" "$tests" --gtest_output=json:"$out/gpu_tests.json" "$@" >"$out/gpu_tests.log" 2>&1
set -e
grep -E "^\[  (FAILED|SKIPPED) |Failure|error:" "$out/gpu_tests.log" | head -60 || true

# 2. The CLI on a fixture: build an engine per precision, run it, compare with PyTorch's outputs,
#    bench it (which reports the GPU's clocks over the timed runs).
cli_pass=0 cli_fail=0
fx=tests/models/bert
for prec in fp32 fp16 bf16; do
  eng="$out/bert.$prec.ingot"
  tol=$([ "$prec" = fp32 ] && echo 1e-4 || echo 1e-2)
  if "$ingot" build $fx/model.dynamo.onnx -o "$eng" --device cuda --precision $prec --verbose >"$out/build_$prec.log" 2>&1 &&
     "$ingot" compare "$eng" --inputs $fx/inputs.npz --reference $fx/reference.npz --atol $tol --rtol $tol >"$out/compare_$prec.log" 2>&1 &&
     "$ingot" bench "$eng" --shapes "$(python3 - <<EOF 2>/dev/null || echo ""
import numpy as np
z = np.load("$fx/inputs.npz")
print(",".join(k + ":" + "x".join(str(d) for d in z[k].shape) for k in z.files))
EOF
)" --iterations 50 --duration 0.2 >"$out/bench_$prec.log" 2>&1 &&
     grep -q "^GPU clocks, shape 1: SM" "$out/bench_$prec.log"; then
    cli_pass=$((cli_pass + 1))
    tail -4 "$out/bench_$prec.log" | head -2
  else
    cli_fail=$((cli_fail + 1))
    echo "FAILED: CLI build/compare/bench (with its GPU clocks line) --device cuda --precision $prec"
    tail -3 "$out"/build_$prec.log "$out"/compare_$prec.log "$out"/bench_$prec.log 2>/dev/null || true
  fi
done
# ingot bench on the ONNX model itself: the cuda engine it makes is tuned at the shape first.
shapes=$(python3 -c 'import numpy as np, sys; z = np.load(sys.argv[1]); print(",".join(k + ":" + "x".join(str(d) for d in z[k].shape) for k in z.files))' $fx/inputs.npz 2>/dev/null)
if "$ingot" bench $fx/model.dynamo.onnx --device cuda --precision fp16 --shapes "$shapes" --iterations 20 --duration 0.1 \
     >"$out/bench_onnx.log" 2>&1 && grep -q "tuned at this shape" "$out/bench_onnx.log"; then
  cli_pass=$((cli_pass + 1))
else
  cli_fail=$((cli_fail + 1)); echo "FAILED: ingot bench MODEL.onnx --device cuda (tuned at the shape)"
  tail -3 "$out/bench_onnx.log"
fi
# An engine file on the CPU device is refused with one line when it was built for cuda.
if "$ingot" run "$out/bert.fp32.ingot" --device cpu >"$out/wrong_device.log" 2>&1; then
  cli_fail=$((cli_fail + 1)); echo "FAILED: a cuda engine ran with --device cpu"
elif grep -q "built for device 'cuda'" "$out/wrong_device.log"; then
  cli_pass=$((cli_pass + 1))
else
  cli_fail=$((cli_fail + 1)); echo "FAILED: wrong-device message:"; cat "$out/wrong_device.log"
fi

# Logs as one archive (the device tool returns few files).
tar -C "$out" -czf "$out/gpu-check-logs.tgz" $(cd "$out" && ls *.log *.json 2>/dev/null) && rm -f "$out"/*.log "$out"/*.ingot

python3 - "$out/gpu_tests.json" "$cli_pass" "$cli_fail" <<'EOF'
import json, sys
passed, failed, skipped = int(sys.argv[2]), int(sys.argv[3]), 0
try:
    report = json.load(open(sys.argv[1]))
    for suite in report.get("testsuites", []):
        for t in suite.get("testsuite", []):
            if t.get("result") == "SKIPPED" or t.get("status") == "NOTRUN":
                skipped += 1
            elif t.get("failures"):
                failed += 1
            else:
                passed += 1
except Exception as e:  # the test binary crashed before writing its report
    print(f"ingot: error: no GPU test report ({e}); see gpu_tests.log")
    failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
EOF
