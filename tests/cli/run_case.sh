#!/usr/bin/env bash
# One CLI test case: run_case.sh INGOT_BINARY CASE
# Error cases check the exit code and that stderr is exactly one line starting "ingot: error:"
# that names the right thing. Success cases check the exit code, an empty stderr and stdout.
# Exit 0 pass, 1 fail, 77 skipped (needs Debian's /usr/bin/python3 with numpy).
set -u
INGOT=$1
CASE=$2
HERE=$(cd "$(dirname "$0")" && pwd)
M=$HERE/models
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

fail() { echo "FAIL [$CASE]: $*"; echo "--- stdout"; cat "$TMP/out"; echo "--- stderr"; cat "$TMP/err"; exit 1; }

# expect_error RC PATTERN -- ARGS...: exit code RC, one stderr line "ingot: error: ...PATTERN..."
expect_error() {
  local rc=$1 pattern=$2
  shift 3
  "$INGOT" "$@" >"$TMP/out" 2>"$TMP/err"
  local got=$?
  [ "$got" -eq "$rc" ] || fail "exit code $got, expected $rc"
  [ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "stderr is not exactly one line"
  head -c 14 "$TMP/err" | grep -q '^ingot: error: ' || fail "stderr does not start with 'ingot: error: '"
  grep -qF -- "$pattern" "$TMP/err" || fail "stderr does not contain '$pattern'"
  echo "PASS [$CASE]: $(cat "$TMP/err")"
}

# expect_ok PATTERN... -- ARGS...: exit 0, empty stderr, stdout contains every PATTERN
expect_ok() {
  local patterns=()
  while [ "$1" != "--" ]; do patterns+=("$1"); shift; done
  shift
  "$INGOT" "$@" >"$TMP/out" 2>"$TMP/err"
  local got=$?
  [ "$got" -eq 0 ] || fail "exit code $got, expected 0"
  [ ! -s "$TMP/err" ] || fail "stderr is not empty"
  for p in "${patterns[@]}"; do grep -qF -- "$p" "$TMP/out" || fail "stdout does not contain '$p'"; done
  echo "PASS [$CASE]"
}

need_numpy() { /usr/bin/python3 -c 'import numpy' 2>/dev/null || { echo "SKIP [$CASE]: no /usr/bin/python3 with numpy"; exit 77; }; }

case $CASE in
  # ---- names and paths that are not text: control bytes and bytes that are not UTF-8 (legal in
  # ONNX names and Linux paths). Error lines and reports write them as \xNN (one line of
  # printable text); JSON (inspect --json, the engine file's manifest) writes them as U+FFFD.
  weird_names)
    need_numpy
    /usr/bin/python3 - "$M" "$TMP" <<'PY' || fail "could not write the test models"
import os, sys
m, t = sys.argv[1], sys.argv[2]
src = open(os.path.join(m, "unknown_op.onnx"), "rb").read()
assert src.count(b"frob_1") == 1
open(os.path.join(t, "weird_node.onnx"), "wb").write(src.replace(b"frob_1", b"\x1b[1m\xff\x07"))
src = open(os.path.join(m, "identity.onnx"), "rb").read()
assert src.count(b"\n\x01x") == 2
open(os.path.join(t, "weird_input.onnx"), "wb").write(src.replace(b"\n\x01x", b"\n\x01\xff"))
open(os.path.join(os.fsencode(t), b"id\xff.onnx"), "wb").write(src)
PY
    expect_error 1 "node '\x1B[1m\xFF\x07' (FrobnicateTensor): ingot has no cpu kernel" -- run "$TMP/weird_node.onnx"
    LC_ALL=C grep -q '[^ -~]' "$TMP/err" && fail "stderr holds bytes other than printable ASCII"
    expect_ok "node '\x1B[1m\xFF\x07'" -- inspect "$TMP/weird_node.onnx"
    LC_ALL=C grep -q '[^ -~]' "$TMP/out" && fail "inspect's report holds bytes other than printable ASCII"
    expect_ok "inputs (1)" "  \xFF  float32" -- inspect "$TMP/weird_input.onnx" --json "$TMP/i.json"
    /usr/bin/python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["inputs"][0]["name"] == "\ufffd"' "$TMP/i.json" ||
      fail "inspect --json does not name the input U+FFFD"
    expect_ok "engine:" -- build "$TMP/id"$'\xff'".onnx" -o "$TMP/id.ingot"
    expect_ok "built from" -- inspect "$TMP/id.ingot" ;;
  # ---- errors: exit 1
  # Shapes larger than any machine: the input is refused before its memory is touched (Linux
  # would otherwise let the allocation through and kill the process while it fills it), and an
  # element count past int64 does not wrap around.
  huge_shapes)
    expect_error 1 "input 'input_ids' of shape 99999999999x100000 int64 needs 72759.6 TiB, more host memory than this machine could give" \
      -- run "$M/embed.onnx" --shapes input_ids:99999999999x100000
    expect_error 1 "input 'input_ids' of shape 4000000000x4000000000 int64 needs" \
      -- run "$M/embed.onnx" --shapes input_ids:4000000000x4000000000 ;;
  missing_file)        expect_error 1 "does_not_exist.onnx: no such file" -- inspect "$M/does_not_exist.onnx" ;;
  run_missing_file)    expect_error 1 "does_not_exist.onnx: no such file" -- run "$M/does_not_exist.onnx" ;;
  not_onnx)            expect_error 1 "not_onnx.onnx: not" -- run "$M/not_onnx.onnx" ;;
  truncated)           expect_error 1 "truncated.onnx: not a valid ONNX model" -- inspect "$M/truncated.onnx" ;;
  unknown_op)          expect_error 1 "node 'frob_1' (FrobnicateTensor): ingot has no cpu kernel" -- run "$M/unknown_op.onnx" ;;
  # A tensor in a node's attribute has no name of its own: the error names the node and attribute.
  undefined_constant)  expect_error 1 "undefined_constant.onnx: node 'const_1' (Constant): attribute 'value': element type undefined is not supported" \
                         -- run "$M/undefined_constant.onnx" ;;
  unknown_domain)      expect_error 1 "domain 'com.example.custom'" -- run "$M/unknown_domain.onnx" ;;
  wrong_input_name)    expect_error 1 "has no input 'nope' (its inputs: x)" -- run "$M/identity.onnx" --input "nope=$M/x_2x4.npy" ;;
  wrong_input_dtype)   expect_error 1 "input 'x' has dtype int64, expected float32" -- run "$M/identity.onnx" --input "x=$M/x_int64_2x4.npy" ;;
  wrong_input_rank)    expect_error 1 "input 'x' has rank 3 (shape 2x4x1), expected rank 2" -- run "$M/identity.onnx" --input "x=$M/x_2x4x1.npy" ;;
  inconsistent_shapes) expect_error 1 "dimension 'batch' is 2 in input 'a' but 3 in input 'b'" -- run "$M/two_inputs.onnx" --input "a=$M/x_2x4.npy" --input "b=$M/x_3x4.npy" ;;
  missing_external_data) expect_error 1 "missing_weights.bin" -- run "$M/external_data.onnx" ;;
  missing_inputs_file) expect_error 1 "nothere.npz: no such file" -- run "$M/identity.onnx" --inputs "$M/nothere.npz" ;;
  npy_as_npz)          expect_error 1 "x_2x4.npy: is a .npy file, expected an .npz" -- run "$M/identity.onnx" --inputs "$M/x_2x4.npy" ;;
  npz_as_npy)          expect_error 1 "identity_in.npz: not a .npy file" -- run "$M/identity.onnx" --input "x=$M/identity_in.npz" ;;
  shapes_unknown_input) expect_error 1 "--shapes: " -- run "$M/identity.onnx" --shapes y:1x4 ;;
  # ---- bad usage: exit 2
  malformed_shapes)    expect_error 2 "--shapes: input 'x': dimension 'q'" -- run "$M/identity.onnx" --shapes x:2xq ;;
  malformed_shapes_noname) expect_error 2 "--shapes: '2x4' has no 'name:'" -- run "$M/identity.onnx" --shapes 2x4 ;;
  malformed_input)     expect_error 2 "--input: 'x' is not NAME=FILE" -- run "$M/identity.onnx" --input x ;;
  unknown_flag)        expect_error 2 "--bogus" -- run "$M/identity.onnx" --bogus ;;
  unknown_subcommand)  expect_error 2 "unknown subcommand 'frobnicate'" -- frobnicate ;;
  no_subcommand)       expect_error 2 "no subcommand given" -- ;;
  missing_model_arg)   expect_error 2 "model is required" -- inspect ;;
  # ---- success
  help)                expect_ok "inspect" "run" -- --help ;;
  version)             expect_ok "ingot " -- --version ;;
  inspect)
    expect_ok "ir_version  8" "ai.onnx 13" "producer    ingot-tests 1" "x  float32  [batch, 4]" "Identity  1" \
              "every node has a cpu kernel" -- inspect "$M/identity.onnx" ;;
  inspect_engine)
    "$INGOT" build "$M/mlp.onnx" -o "$TMP/mlp.ingot" --min-shapes x:1x4 --max-shapes x:8x4 >/dev/null 2>&1 || fail "build failed"
    expect_ok "engine      format 1" "device      cpu" "precision   fp32" "profiles    profile 0: x 1x4..8x4" \
              "(its optimized graph)" "ops (" -- inspect "$TMP/mlp.ingot" --json "$TMP/e.json"
    grep -q '"engine"' "$TMP/e.json" || fail "the JSON has no engine section" ;;
  inspect_truncated_engine)
    "$INGOT" build "$M/mlp.onnx" -o "$TMP/mlp.ingot" >/dev/null 2>&1 || fail "build failed"
    head -c 200 "$TMP/mlp.ingot" >"$TMP/cut.ingot"
    expect_error 1 "cut.ingot: truncated or corrupt engine file" -- inspect "$TMP/cut.ingot" ;;
  inspect_unsupported)
    expect_ok "FrobnicateTensor  (domain ai.onnx)  node 'frob_1'" "will not run" -- inspect "$M/unknown_op.onnx" ;;
  inspect_json)
    expect_ok "parameters  40 (160 B in 1 initializers)" -- inspect "$M/embed.onnx" --json "$TMP/m.json"
    for p in '"ir_version": 8' '"input_ids"' '"batch"' '"Gather": 1' '"count": 40' '"bytes": 160'; do
      grep -qF -- "$p" "$TMP/m.json" || fail "JSON does not contain $p"
    done
    if [ -x /usr/bin/python3 ]; then
      /usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["inputs"][0]["shape"]==["batch","sequence"], j' \
        "$TMP/m.json" || fail "JSON does not parse or has the wrong input shape"
    fi ;;
  run_random)
    expect_ok "note: 'batch' unset, using 1" "input 'x'  float32  [1x4]  random uniform" "output 'y'  float32  [1x4]" "min " \
              -- run "$M/identity.onnx" --seed 7 ;;
  run_shapes)
    expect_ok "input 'a'  float32  [3x4]" "input 'b'  float32  [3x4]" "output 'yb'  float32  [3x4]" \
              -- run "$M/two_inputs.onnx" --shapes a:3x4 --threads 1 ;;
  run_save_outputs)
    need_numpy
    expect_ok "saved 1 output(s)" -- run "$M/identity.onnx" --inputs "$M/identity_in.npz" --save-outputs "$TMP/o.npz"
    /usr/bin/python3 -c 'import numpy as np,sys; a=np.load(sys.argv[1]); b=np.load(sys.argv[2]); assert a.files==["y"]; assert (a["y"]==b["x"]).all()' \
      "$TMP/o.npz" "$M/identity_in.npz" || fail "saved outputs differ from the inputs" ;;
  build_and_run_engine)
    expect_ok "engine:" -- build "$M/mlp.onnx" -o "$TMP/mlp.ingot" --min-shapes x:1x4 --opt-shapes x:2x4 --max-shapes x:8x4
    expect_ok "output 'y'  float32  [2x8]" -- run "$TMP/mlp.ingot" --shapes x:2x4 ;;
  build_dynamic_without_profile)
    # No profile and a dynamic batch: the engine says so, and runs two shapes (each planned at its first run).
    expect_ok "profiles:   none (dynamic input shapes" -- build "$M/mlp.onnx" -o "$TMP/mlp.ingot"
    expect_ok "profiles    none (dynamic input shapes" -- inspect "$TMP/mlp.ingot"
    expect_ok "output 'y'  float32  [3x8]" -- run "$TMP/mlp.ingot" --shapes x:3x4
    expect_ok "output 'y'  float32  [5x8]" -- run "$TMP/mlp.ingot" --shapes x:5x4 ;;
  build_float16_io)
    expect_ok "float16 io: inputs x (float32 in the model)" "float16 io: outputs y (float32 in the model)" -- \
      build "$M/mlp.onnx" -o "$TMP/mlp16.ingot" --min-shapes x:1x4 --max-shapes x:8x4 --io-precision fp16
    expect_ok "output 'y'  float16  [2x8]" -- run "$TMP/mlp16.ingot" --shapes x:2x4
    expect_ok "io          fp16: float32 in the model, float16 here: x y" -- inspect "$TMP/mlp16.ingot"
    /usr/bin/python3 -c "import numpy as np; np.save('$TMP/x32.npy', np.ones((2, 4), np.float32))" 2>/dev/null || exit 77
    expect_error 1 "input 'x' has dtype float32, expected float16 (the engine was built with --io-precision fp16)" -- \
      run "$TMP/mlp16.ingot" --input "x=$TMP/x32.npy"
    expect_error 2 "--io-precision: fp8 not in {model,fp16}" -- build "$M/mlp.onnx" -o "$TMP/m.ingot" --io-precision fp8 ;;
  build_profiles_file)
    echo '[{"min": {"x": [1, 4]}, "opt": {"x": [2, 4]}, "max": {"x": [4, 4]}}]' >"$TMP/p.json"
    expect_ok "x 1x4..4x4" -- build "$M/mlp.onnx" -o "$TMP/mlp.ingot" --profiles "$TMP/p.json" ;;
  build_bad_profiles_file)
    echo '[{"min": {"x": "wide"}}]' >"$TMP/p.json"
    expect_error 1 "p.json: not a list of" -- build "$M/mlp.onnx" -o "$TMP/mlp.ingot" --profiles "$TMP/p.json" ;;
  run_engine_outside_profile)
    "$INGOT" build "$M/mlp.onnx" -o "$TMP/mlp.ingot" --min-shapes x:1x4 --max-shapes x:2x4 >/dev/null 2>&1 || fail "build failed"
    expect_error 1 "input 'x' has shape 3x4, outside the engine's optimization profiles" -- run "$TMP/mlp.ingot" --shapes x:3x4 ;;
  static_shape_error)
    # A model whose declared shapes fail at load: the model is named once, then the node.
    expect_error 1 "static_shape_error.onnx: node 'col2im' (Col2Im): input 0 (input) has 12 columns; the sliding positions are 15" \
                 -- run "$M/static_shape_error.onnx"
    [ "$(grep -o 'static_shape_error.onnx' "$TMP/err" | wc -l)" -eq 1 ] || fail "the model is named more than once" ;;
  run_sequence_too_long)
    # DistilBERT's positions are a slice of a 128-row constant: 200 tokens cannot be embedded.
    expect_error 1 "1x200 (lookup 0, a table of 1000 rows), 1x128 (lookup 1, a table of 128 rows); a sequence longer than the model's table of positions" \
                 -- run "$HERE/../models/distilbert/model.torchscript.onnx" --shapes input_ids:1x200,attention_mask:1x200 ;;
  run_mlp)
    expect_ok "output 'y'  float32  [2x8]" -- run "$M/mlp.onnx" --shapes x:2x4 ;;
  run_embed)
    expect_ok "random integers in [0, 10) (indices of a Gather over 10 rows)" "ones (a mask)" "output 'y'  float32  [2x5x4]" \
              -- run "$M/embed.onnx" --shapes input_ids:2x5 ;;
  *) echo "unknown case '$CASE'"; exit 1 ;;
esac
