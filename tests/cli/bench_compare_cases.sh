#!/usr/bin/env bash
# CLI cases of `ingot bench` and `ingot compare`: bench_compare_cases.sh INGOT_BINARY CASE
# Same conventions as run_case.sh: error cases check the exit code and one stderr line
# "ingot: error: ..."; success cases check the exit code, an empty stderr and stdout patterns.
# Timing is never asserted. Exit 0 pass, 1 fail, 77 skipped (no /usr/bin/python3 with numpy, or
# for the ONNX Runtime cases, no ONNX Runtime: see scripts/install_ort.sh).
set -u
RUNNER=""  # a command prefix for ingot (env ...)
INGOT=$1
CASE=$2
HERE=$(cd "$(dirname "$0")" && pwd)
M=$HERE/models
TM=$HERE/../models
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
: >"$TMP/out"
: >"$TMP/err"

fail() { echo "FAIL [$CASE]: $*"; echo "--- stdout"; cat "$TMP/out"; echo "--- stderr"; cat "$TMP/err"; exit 1; }

# expect_error RC PATTERN -- ARGS...: exit code RC, one stderr line "ingot: error: ...PATTERN..."
expect_error() {
  local rc=$1 pattern=$2
  shift 3
  $RUNNER "$INGOT" "$@" >"$TMP/out" 2>"$TMP/err"
  local got=$?
  [ "$got" -eq "$rc" ] || fail "exit code $got, expected $rc"
  [ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "stderr is not exactly one line"
  head -c 14 "$TMP/err" | grep -q '^ingot: error: ' || fail "stderr does not start with 'ingot: error: '"
  grep -qF -- "$pattern" "$TMP/err" || fail "stderr does not contain '$pattern'"
  echo "PASS [$CASE]: $(cat "$TMP/err")"
}

# expect_rc RC PATTERN... -- ARGS...: exit code RC, empty stderr, stdout contains every PATTERN
expect_rc() {
  local rc=$1
  shift
  local patterns=()
  while [ "$1" != "--" ]; do patterns+=("$1"); shift; done
  shift
  "$INGOT" "$@" >"$TMP/out" 2>"$TMP/err"
  local got=$?
  [ "$got" -eq "$rc" ] || fail "exit code $got, expected $rc"
  [ ! -s "$TMP/err" ] || fail "stderr is not empty"
  for p in "${patterns[@]}"; do grep -qF -- "$p" "$TMP/out" || fail "stdout does not contain '$p'"; done
  echo "PASS [$CASE]"
}

need_python() { [ -x /usr/bin/python3 ] || { echo "SKIP [$CASE]: no /usr/bin/python3"; exit 77; }; }
need_numpy() { /usr/bin/python3 -c 'import numpy' 2>/dev/null || { echo "SKIP [$CASE]: no /usr/bin/python3 with numpy"; exit 77; }; }
# Skips when no ONNX Runtime peer can be started (the message is the one users get).
need_ort() {
  "$INGOT" compare "$M/identity.onnx" --shapes x:1x4 --against ort >"$TMP/out" 2>"$TMP/err"
  if grep -qF "no ONNX Runtime found" "$TMP/err"; then echo "SKIP [$CASE]: $(cat "$TMP/err")"; exit 77; fi
}
# check_json FILE PYTHON-EXPRESSION-ON-j
check_json() {
  /usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert eval(sys.argv[2]), sys.argv[2]' "$1" "$2" \
    || fail "JSON check failed: $2"
}

case $CASE in
  # ---- bench
  bench_json)
    need_python
    expect_rc 0 "| backend |" "| ingot " "median ms" "wrote $TMP/b.json" \
      -- bench "$M/mlp.onnx" --shapes x:2x4 --iterations 5 --duration 0 --warmup-ms 0 --threads 1 --json "$TMP/b.json"
    for e in 'j["model"].endswith("mlp.onnx")' 'j["settings"]["iterations"]==5' 'j["settings"]["threads"]==1' \
             'j["against"] is None' 'len(j["results"])==1' 'j["results"][0]["shapes"]=={"x":[2,4]}' \
             'j["results"][0]["batch"]==2' 'j["results"][0]["ingot"]["count"]>=5' \
             'len(j["results"][0]["ingot"]["latencies_ms"])==j["results"][0]["ingot"]["count"]' \
             'all(k in j["results"][0]["ingot"] for k in ["mean_ms","median_ms","p90_ms","p95_ms","p99_ms","min_ms","max_ms","stddev_ms","inferences_per_s","samples_per_s","peak_rss_kb","rss_delta_kb"])' \
             'j["results"][0]["ingot"]["min_ms"]<=j["results"][0]["ingot"]["median_ms"]<=j["results"][0]["ingot"]["max_ms"]' \
             'abs(j["results"][0]["ingot"]["samples_per_s"]-2*j["results"][0]["ingot"]["inferences_per_s"])<1e-6*j["results"][0]["ingot"]["samples_per_s"]+1e-9' \
             'j["results"][0]["ingot"]["peak_rss_kb"]>0' 'j["machine"]["logical_cores"]>=1'; do
      check_json "$TMP/b.json" "$e"
    done ;;
  bench_sweep)
    need_python
    expect_rc 0 "| batch | seq |" "shape 4   input_ids:2x5,attention_mask:2x5" \
      -- bench "$M/embed.onnx" --batch 1,2 --seq 3,5 --iterations 2 --duration 0 --warmup-ms 0 --json "$TMP/s.json"
    check_json "$TMP/s.json" '[(r["batch"],r["seq"]) for r in j["results"]]==[(1,3),(1,5),(2,3),(2,5)]'
    check_json "$TMP/s.json" 'j["results"][3]["shapes"]=={"input_ids":[2,5],"attention_mask":[2,5]}' ;;
  bench_streams)
    need_python
    expect_rc 0 "streams   3 execution contexts run at once" "| ingot " \
      -- bench "$M/mlp.onnx" --shapes x:2x4 --streams 3 --iterations 6 --duration 0 --warmup-ms 0 --threads 1 --json "$TMP/t.json"
    for e in 'j["settings"]["streams"]==3' 'j["results"][0]["ingot"]["streams"]==3' \
             'j["results"][0]["ingot"]["count"]>=6 and j["results"][0]["ingot"]["count"]%3==0' \
             'len(j["results"][0]["ingot"]["latencies_ms"])==j["results"][0]["ingot"]["count"]' \
             'j["results"][0]["ingot"]["inferences_per_s"]>0' \
             'abs(j["results"][0]["ingot"]["inferences_per_s"]-1000*j["results"][0]["ingot"]["count"]/j["results"][0]["ingot"]["wall_ms"])<1e-6*j["results"][0]["ingot"]["inferences_per_s"]'; do
      check_json "$TMP/t.json" "$e"
    done ;;
  bench_idle)
    # --idle-time sleeps before every timed run: 5 runs of 40 ms idle take at least 200 ms (a
    # sleep's lower bound, not a timing), and so do 2 x 3 runs on two streams (each stream sleeps
    # before each of its own runs); the latencies leave the sleep out (median under 40 ms).
    need_python
    t0=$(date +%s%N)
    expect_rc 0 "40.000 ms idle before each timed run (--idle-time, not counted in --duration)" "| ingot " \
      -- bench "$M/mlp.onnx" --shapes x:2x4 --idle-time 40 --iterations 5 --block 5 --duration 0 --warmup-ms 0 --threads 1 --json "$TMP/i.json"
    t1=$(date +%s%N)
    [ $(( (t1 - t0) / 1000000 )) -ge 200 ] || fail "5 runs with 40 ms idle each took $(( (t1 - t0) / 1000000 )) ms"
    check_json "$TMP/i.json" 'j["settings"]["idle_time_ms"]==40 and j["results"][0]["ingot"]["count"]==5'
    check_json "$TMP/i.json" 'j["results"][0]["ingot"]["median_ms"]<40'
    t0=$(date +%s%N)
    expect_rc 0 "streams   2 execution contexts run at once" \
      -- bench "$M/mlp.onnx" --shapes x:2x4 --idle-time 70 --streams 2 --iterations 6 --block 3 --duration 0 --warmup-ms 0 --threads 1
    t1=$(date +%s%N)
    [ $(( (t1 - t0) / 1000000 )) -ge 210 ] || fail "3 runs a stream with 70 ms idle each took $(( (t1 - t0) / 1000000 )) ms" ;;
  bench_idle_against_ort)
    need_python
    need_ort
    t0=$(date +%s%N)
    expect_rc 0 "| ORT " "30.000 ms idle before each timed run" \
      -- bench "$M/mlp.onnx" --against ort --shapes x:2x4 --idle-time 30 --iterations 4 --block 4 --duration 0 --warmup-ms 0 --threads 1 --json "$TMP/p.json"
    t1=$(date +%s%N)
    # 4 runs a side, 30 ms before each, plus 2 x 50 ms between the blocks
    [ $(( (t1 - t0) / 1000000 )) -ge 340 ] || fail "4 + 4 runs with 30 ms idle each took $(( (t1 - t0) / 1000000 )) ms"
    check_json "$TMP/p.json" 'j["results"][0]["ort"]["count"]==4 and j["results"][0]["ort"]["median_ms"]<30' ;;
  bench_bad_idle) expect_error 2 "--idle-time" -- bench "$M/mlp.onnx" --idle-time -1 ;;
  bench_help)
    expect_rc 0 "--batch" "--seq" "--against" "dim 1 of every integer (token) input" -- bench --help ;;
  bench_no_seq_dim)
    expect_error 1 "--seq: no input of" -- bench "$M/mlp.onnx" --seq 4 --iterations 1 --duration 0 --warmup-ms 0 ;;
  bench_missing_file)
    expect_error 1 "does_not_exist.onnx: no such file" -- bench "$M/does_not_exist.onnx" ;;
  # ---- compare
  compare_reference_equal)
    "$INGOT" run "$M/two_inputs.onnx" --shapes a:3x4 --seed 3 --save-outputs "$TMP/ref.npz" >"$TMP/out" 2>"$TMP/err" \
      || fail "ingot run failed"
    expect_rc 0 "| ya " "| yb " "PASS: all 2 output(s) match within tolerance" "atol = rtol = 1e-5" \
      -- compare "$M/two_inputs.onnx" --shapes a:3x4 --seed 3 --reference "$TMP/ref.npz" ;;
  compare_reference_perturbed)
    need_numpy
    "$INGOT" run "$M/identity.onnx" --inputs "$M/identity_in.npz" --save-outputs "$TMP/ref.npz" >"$TMP/out" 2>"$TMP/err" \
      || fail "ingot run failed"
    /usr/bin/python3 -c 'import numpy as np,sys; y=np.load(sys.argv[1])["y"].copy(); y[1,2]+=1e-3; np.savez(sys.argv[2], y=y)' \
      "$TMP/ref.npz" "$TMP/bad.npz" || fail "could not write the perturbed reference"
    expect_rc 1 "FAIL" "y: 1 of 12 elements out of tolerance; first at [1, 2]" \
      "FAIL: 1 of 1 output(s) differ beyond tolerance: y" \
      -- compare "$M/identity.onnx" --inputs "$M/identity_in.npz" --reference "$TMP/bad.npz" --json "$TMP/c.json"
    check_json "$TMP/c.json" 'j["pass"]==False and j["failed"]==["y"] and j["outputs"][0]["violations"]==1'
    # ... and a tolerance that covers it passes.
    expect_rc 0 "PASS: all 1 output(s)" \
      -- compare "$M/identity.onnx" --inputs "$M/identity_in.npz" --reference "$TMP/bad.npz" --atol 2e-3 ;;
  compare_against_self)
    expect_rc 0 "reference  $M/embed.onnx through ingot, optimizer off" "PASS: all 2 output(s)" \
      -- compare "$M/embed.onnx" --shapes input_ids:2x5 --against "$M/embed.onnx" ;;
  compare_json)
    need_python
    expect_rc 0 "wrote $TMP/c.json" -- compare "$M/mlp.onnx" --shapes x:3x4 --against "$M/mlp.onnx" --json "$TMP/c.json"
    for e in 'j["pass"]==True' 'j["failed"]==[]' 'j["outputs"][0]["name"]=="y"' 'j["outputs"][0]["shape"]==[3,8]' \
             'j["outputs"][0]["max_abs_error"]<=1e-5' 'j["outputs"][0]["atol"]==1e-5' \
             'j["outputs"][0]["argmax_agreement"]==1.0' 'abs(j["outputs"][0]["cosine_similarity"]-1)<1e-9' \
             'j["inputs"]["x"]["shape"]==[3,4]' 'j["reference"]["kind"]=="onnx"'; do
      check_json "$TMP/c.json" "$e"
    done ;;
  compare_reference_missing_output)
    need_numpy
    /usr/bin/python3 -c 'import numpy as np,sys; np.savez(sys.argv[1], z=np.zeros((3,4),np.float32))' "$TMP/z.npz"
    expect_rc 1 "y: no output 'y' in the reference" "FAIL: 1 of 1 output(s)" \
      -- compare "$M/identity.onnx" --inputs "$M/identity_in.npz" --reference "$TMP/z.npz" ;;
  # ---- bad usage: exit 2
  bench_bad_iterations) expect_error 2 "--iterations" -- bench "$M/mlp.onnx" --iterations 0 ;;
  bench_bad_batch)      expect_error 2 "--batch: 'x' in '1,x' is not a positive integer" -- bench "$M/mlp.onnx" --batch 1,x ;;
  bench_bad_against)    expect_error 2 "--against: 'tensorflow' is not supported" -- bench "$M/mlp.onnx" --against tensorflow ;;
  bench_bad_shapes)     expect_error 2 "--shapes: '2x4' has no 'name:'" -- bench "$M/mlp.onnx" --shapes 2x4 ;;
  bench_bad_streams)    expect_error 2 "--streams" -- bench "$M/mlp.onnx" --streams 0 ;;
  bench_streams_against) expect_error 2 "--streams runs ingot alone: drop --against" -- bench "$M/mlp.onnx" --streams 2 --against ort ;;
  compare_no_reference) expect_error 2 "compare needs --reference REF.npz or --against ort|OTHER.onnx" -- compare "$M/mlp.onnx" ;;
  compare_both)         expect_error 2 "cannot be given together" -- compare "$M/mlp.onnx" --reference a.npz --against ort ;;
  compare_bad_atol)     expect_error 2 "--atol" -- compare "$M/mlp.onnx" --against ort --atol -1 ;;
  compare_unknown_flag) expect_error 2 "--bogus" -- compare "$M/mlp.onnx" --against ort --bogus ;;
  # ---- ONNX Runtime
  against_ort_missing)
    # No python3 and no node on PATH, no package: always the "not found" error, ORT installed or not.
    RUNNER="env PATH=/nonexistent INGOT_ORT_NODE_DIR=/nonexistent INGOT_ORT_PYTHON=/nonexistent"
    expect_error 1 "--against ort: no ONNX Runtime found (tried python3 onnxruntime, node onnxruntime-node in .deps/ort-node; run scripts/install_ort.sh)" \
      -- bench "$M/mlp.onnx" --against ort
    expect_error 1 "--against ort: no ONNX Runtime found" -- compare "$M/mlp.onnx" --against ort ;;
  bench_against_ort)
    need_python
    need_ort
    expect_rc 0 "| ORT " "ingot/ORT" "against   onnxruntime" \
      -- bench "$M/embed.onnx" --against ort --shapes input_ids:2x5 --iterations 5 --duration 0 --warmup-ms 0 --threads 1 --block 3 --json "$TMP/o.json"
    for e in 'j["against"]["intra_op_threads"]==1' 'j["results"][0]["ort"]["count"]>=5' \
             'j["results"][0]["ingot"]["count"]==j["results"][0]["ort"]["count"]' 'j["results"][0]["ratio_median"]>0' \
             'j["results"][0]["ort"]["peak_rss_kb"]>0'; do
      check_json "$TMP/o.json" "$e"
    done ;;
  bench_engine_against_ort)
    need_ort
    "$INGOT" build "$M/mlp.onnx" -o "$TMP/mlp.ingot" >/dev/null 2>&1 || fail "ingot build failed"
    expect_rc 0 "| ORT " "ingot/ORT" "(the engine's source model)" \
      -- bench "$TMP/mlp.ingot" --against ort --shapes x:2x4 --iterations 3 --duration 0 --warmup-ms 0 --threads 1
    cp "$M/mlp.onnx" "$TMP/moved.onnx"
    "$INGOT" build "$TMP/moved.onnx" -o "$TMP/moved.ingot" >/dev/null 2>&1 || fail "ingot build failed"
    rm "$TMP/moved.onnx"
    expect_error 1 "was built from $TMP/moved.onnx, which is not here" -- bench "$TMP/moved.ingot" --against ort --shapes x:2x4
    # compare runs ONNX Runtime on the source model too
    expect_rc 0 "(the engine's source model)" "PASS: all 1 output(s)" \
      -- compare "$TMP/mlp.ingot" --against ort --shapes x:2x4 --threads 1
    expect_error 1 "was built from $TMP/moved.onnx, which is not here" -- compare "$TMP/moved.ingot" --against ort --shapes x:2x4 ;;
  compare_against_ort)
    need_ort
    expect_rc 0 "reference  ONNX Runtime onnxruntime" "PASS: all 2 output(s)" \
      -- compare "$M/embed.onnx" --shapes input_ids:2x5 --against ort ;;
  compare_float16_io_against_ort)
    # ONNX Runtime runs the model's float32 inputs: the engine's float16 ones widened.
    need_ort
    expect_rc 0 "output | dtype" "| y      | float16 |" "PASS: all 1 output(s)" \
      -- compare "$M/mlp.onnx" --io-precision fp16 --shapes x:2x4 --against ort
    expect_rc 0 "io        float16 where the model has float32 (--io-precision fp16): x y; ONNX Runtime gets" \
      -- bench "$M/mlp.onnx" --io-precision fp16 --shapes x:2x4 --against ort --iterations 3 --duration 0 ;;
  newer_ops_against_ort)
    # The ops of opsets 18-20 (and LpNormalization, MaxRoiPool) that Debian's ONNX 1.12 test data
    # lacks (tests/cli/make_models.py, newer_ops()): ingot against ONNX Runtime, one node each.
    need_ort
    for f in "$M"/newer_ops/*.onnx; do
      expect_rc 0 "reference  ONNX Runtime onnxruntime" "PASS: all 1 output(s)" -- compare "$f" --against ort
    done ;;
  *) echo "unknown case '$CASE'"; exit 1 ;;
esac
