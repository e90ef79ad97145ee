#!/usr/bin/env bash
# `ingot run --text` cases: text_cases.sh INGOT_BINARY CASE [PYTHON_MODULE_DIR]
# The test models (tests/models/*) have a 1000-token vocabulary, so the tokenizers of
# tests/text (3000 tokens) are cut to their first 1000 ids (python/tests/small_tokenizer.py).
# PYTHON_MODULE_DIR holds the `ingot` Python module; the cases that compare against
# `ingot run --inputs` make the ids with it.
# Exit 0 pass, 1 fail, 77 skipped (needs Debian's /usr/bin/python3; numpy for some cases).
set -u
INGOT=$1
CASE=$2
PYDIR=${3:-}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
MODELS=$ROOT/tests/models
CLIM=$HERE/models
PY=/usr/bin/python3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

fail() { echo "FAIL [$CASE]: $*"; echo "--- stdout"; cat "$TMP/out" 2>/dev/null; echo "--- stderr"; cat "$TMP/err" 2>/dev/null; exit 1; }
skip() { echo "SKIP [$CASE]: $*"; exit 77; }

[ -x "$PY" ] || skip "no $PY"
need_numpy() { "$PY" -c 'import numpy' 2>/dev/null || skip "no numpy in $PY"; }
need_module() {
  need_numpy
  [ -n "$PYDIR" ] && PYTHONPATH=$PYDIR "$PY" -c 'import ingot' 2>/dev/null || skip "the ingot Python module is not built (in '$PYDIR')"
}

# Small tokenizers whose ids fit the models.
"$PY" "$ROOT/python/tests/small_tokenizer.py" "$ROOT/tests/text/wordpiece.tokenizer.json" "$TMP/wp.json" 1000 || fail "small_tokenizer.py"
"$PY" "$ROOT/python/tests/small_tokenizer.py" "$ROOT/tests/text/bpe_gpt2.tokenizer.json" "$TMP/gpt2.json" 1000 || fail "small_tokenizer.py"
"$PY" "$ROOT/python/tests/small_tokenizer.py" "$ROOT/tests/text/bpe_roberta.tokenizer.json" "$TMP/roberta.json" 1000 || fail "small_tokenizer.py"

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

# run_ok ARGS...: exit 0 and an empty stderr.
run_ok() {
  "$INGOT" "$@" >"$TMP/out" 2>"$TMP/err"
  local got=$?
  [ "$got" -eq 0 ] || fail "exit code $got, expected 0"
  [ ! -s "$TMP/err" ] || fail "stderr is not empty"
}

# check_topk NTEXTS K: stdout has NTEXTS "text i:" headers, each followed by K lines
# "  r. ... p" with probabilities in [0, 1], best first, summing to at most 1.
check_topk() {
  "$PY" - "$TMP/out" "$1" "$2" <<'EOF' || fail "top-k block is wrong"
import re, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
ntexts, k = int(sys.argv[2]), int(sys.argv[3])
heads = [i for i, l in enumerate(lines) if re.match(r"^text \d+: ", l)]
assert len(heads) == ntexts, f"{len(heads)} text headers, expected {ntexts}"
for h in heads:
    block = []
    for l in lines[h + 1:]:
        m = re.match(r"^  (\d+)\. .*  ([0-9.]+)$", l)
        if not m:
            break
        block.append(float(m.group(2)))
    assert len(block) == k, f"{lines[h]!r}: {len(block)} prediction lines, expected {k}"
    assert all(0 <= p <= 1 for p in block), block
    assert block == sorted(block, reverse=True), f"not best first: {block}"
    assert sum(block) <= 1 + 1e-5, f"probabilities sum to {sum(block)}"
print("top-k ok:", ntexts, "x", k)
EOF
}

# same_as_inputs MODEL TOKENIZER KIND ARGS...: `ingot run --text` equals `ingot run --inputs`
# with the ids made by the Python module; the printed probabilities are the softmax of the
# logits (classifier: per row; lm: at each row's last real token).
same_as_inputs() {
  local model=$1 tok=$2 kind=$3
  shift 3
  need_module
  run_ok run "$model" --tokenizer "$tok" --top-k 3 --save-outputs "$TMP/text_out.npz" "$@"
  cp "$TMP/out" "$TMP/text_stdout"
  PYTHONPATH=$PYDIR "$PY" - "$model" "$tok" "$TMP/inputs.npz" "$@" <<'EOF' || fail "making the inputs with the Python module"
import sys
import numpy as np
import ingot
model, tok_path, out = sys.argv[1:4]
args = sys.argv[4:]
texts = [args[i + 1] for i in range(len(args)) if args[i] == "--text"]
pairs = [args[i + 1] for i in range(len(args)) if args[i] == "--text-pair"] or None
tok = ingot.Tokenizer.from_file(tok_path)
encs = tok.encode_batch(texts, pairs, padding=True)
names = [i.name for i in ingot.InferenceSession(model).get_inputs()]
fields = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}
np.savez(out, **{n: np.array([getattr(e, fields[n]) for e in encs], dtype=np.int64) for n in names})
EOF
  run_ok run "$model" --inputs "$TMP/inputs.npz" --save-outputs "$TMP/ids_out.npz"
  "$PY" - "$TMP/text_out.npz" "$TMP/ids_out.npz" "$TMP/inputs.npz" "$TMP/text_stdout" "$kind" <<'EOF' || fail "--text and --inputs disagree"
import re, sys
import numpy as np
a, b, inp = np.load(sys.argv[1]), np.load(sys.argv[2]), np.load(sys.argv[3])
kind = sys.argv[5]
for k in b.files:
    np.testing.assert_allclose(a[k], b[k], rtol=0, atol=1e-6, err_msg=f"output {k}")
logits = b["logits"].astype(np.float64)
if kind == "lm":
    mask = inp["attention_mask"]
    last = np.array([np.nonzero(m)[0].max() for m in mask])
    logits = logits[np.arange(len(last)), last]
p = np.exp(logits - logits.max(-1, keepdims=True))
p /= p.sum(-1, keepdims=True)
lines = open(sys.argv[4], encoding="utf-8").read().splitlines()
row = -1
n = 0
for l in lines:
    if re.match(r"^text \d+: ", l):
        row += 1
        continue
    m = re.match(r"^  \d+\. (?:LABEL_(\d+)|.*\(id (\d+)\))  ([0-9.]+)$", l)
    if m and row >= 0:
        idx = int(m.group(1) or m.group(2))
        assert abs(p[row, idx] - float(m.group(3))) <= 2e-6, (row, idx, p[row, idx], m.group(3))
        n += 1
assert row + 1 == len(p) and n == min(3, p.shape[-1]) * len(p), (row, n)
top = np.argsort(-p, axis=-1, kind="stable")[:, :3]
print("probabilities match softmax of --inputs logits; top-3 ids", top.tolist())
EOF
  echo "PASS [$CASE]"
}

printf 'negative\npositive\n' >"$TMP/labels2.txt"
printf 'a\nb\nc\n' >"$TMP/labels3.txt"

case $CASE in
  # ---- success
  bench_text)
    # ingot bench --text: tokenization + inference timed end to end, shapes from the batch.
    run_ok bench "$MODELS/bert/model.torchscript.onnx" --tokenizer "$TMP/wp.json" \
      --text "the quick brown fox" --text "hello" --iterations 3 --duration 0 --warmup-ms 0 --json "$TMP/b.json"
    grep -qF "timing tokenization of 2 text(s)" "$TMP/out" || fail "no note about tokenization"
    "$PY" -c "import json,sys; j=json.load(open(sys.argv[1])); assert len(j['results'])==1, j" "$TMP/b.json" \
      || fail "json has not exactly one result"
    ;;
  bench_text_without_tokenizer)
    expect_error 2 "--text needs --tokenizer" -- bench "$MODELS/bert/model.torchscript.onnx" --text "hi"
    ;;
  text_classifier)
    run_ok run "$MODELS/bert/model.torchscript.onnx" --tokenizer "$TMP/wp.json" --labels "$TMP/labels2.txt" \
      --text "the quick brown fox" --text "hello" --top-k 2
    grep -q "input 'input_ids'  int64  \[2x" "$TMP/out" || fail "no batched input_ids line"
    grep -qF "from --text (attention_mask)" "$TMP/out" || fail "attention_mask not from --text"
    grep -qE "^  1\. (negative|positive)  " "$TMP/out" || fail "labels not used"
    check_topk 2 2
    echo "PASS [$CASE]" ;;
  text_classifier_default_labels)
    run_ok run "$MODELS/distilbert/model.torchscript.onnx" --tokenizer "$TMP/wp.json" --text "one text" --top-k 3
    grep -qE "^  1\. LABEL_[0-4]  " "$TMP/out" || fail "no LABEL_i lines"
    check_topk 1 3
    echo "PASS [$CASE]" ;;
  text_pair)
    run_ok run "$MODELS/bert/model.dynamo.onnx" --tokenizer "$TMP/wp.json" --text "a question" --text-pair "an answer" \
      --text "second" --text-pair "pair of it" --top-k 5
    grep -qF -- '+ "an answer"' "$TMP/out" || fail "pair not shown"
    check_topk 2 2   # top-k is clamped to the 2 classes
    echo "PASS [$CASE]" ;;
  text_lm)
    run_ok run "$MODELS/gpt2/model.torchscript.onnx" --tokenizer "$TMP/gpt2.json" --text "the cat sat on the" \
      --text "hi" --top-k 4
    grep -q "next token after position" "$TMP/out" || fail "not read as a language model"
    check_topk 2 4
    echo "PASS [$CASE]" ;;
  text_max_length)
    run_ok run "$MODELS/roberta/model.torchscript.onnx" --tokenizer "$TMP/roberta.json" \
      --text "a long text that will be cut down to a few tokens only" --max-length 5 --top-k 1
    grep -q "input 'input_ids'  int64  \[1x5\]" "$TMP/out" || fail "not truncated to 5 tokens"
    check_topk 1 1
    echo "PASS [$CASE]" ;;
  text_save_outputs)
    run_ok run "$MODELS/roberta/model.dynamo.onnx" --tokenizer "$TMP/roberta.json" --text "x y z" \
      --save-outputs "$TMP/o.npz"
    grep -q "saved 1 output(s)" "$TMP/out" || fail "outputs not saved"
    [ -s "$TMP/o.npz" ] || fail "no npz"
    echo "PASS [$CASE]" ;;
  text_classifier_equals_inputs)
    same_as_inputs "$MODELS/bert/model.torchscript.onnx" "$TMP/wp.json" classifier \
      --text "the quick brown fox jumps" --text "over" --text-pair "the lazy dog" --text-pair "and more" ;;
  text_lm_equals_inputs)
    same_as_inputs "$MODELS/gpt2/model.dynamo.onnx" "$TMP/gpt2.json" lm --text "in the beginning there was" --text "a" ;;
  # ---- errors
  text_no_tokenizer_flag) expect_error 2 "--text needs --tokenizer" -- run "$MODELS/bert/model.torchscript.onnx" --text hi ;;
  text_tokenizer_missing) expect_error 1 "nothere.tokenizer.json" -- run "$MODELS/bert/model.torchscript.onnx" --tokenizer "$TMP/nothere.tokenizer.json" --text hi ;;
  text_pair_count)     expect_error 2 "--text-pair given 1 time(s) but --text 2 time(s)" -- run "$MODELS/bert/model.torchscript.onnx" --tokenizer "$TMP/wp.json" --text a --text b --text-pair c ;;
  text_pair_without_text) expect_error 2 "--text-pair needs --text" -- run "$MODELS/bert/model.torchscript.onnx" --text-pair c ;;
  text_input_not_providable) expect_error 1 "model input 'a' cannot be made from text" -- run "$CLIM/two_inputs.onnx" --tokenizer "$TMP/wp.json" --text hi ;;
  text_id_out_of_range)
    # The full 3000-token tokenizer gives ids the 1000-row embedding table does not have.
    expect_error 1 "outside the model's embedding table of 1000 rows" -- run "$MODELS/bert/model.torchscript.onnx" \
      --tokenizer "$ROOT/tests/text/wordpiece.tokenizer.json" --text "leading and trailing spaces"
    grep -qF "input 'input_ids': token id " "$TMP/err" || fail "the input and id are not named" ;;
  text_labels_mismatch) expect_error 1 "has 3 labels, but output 'logits' has 2 classes" -- run "$MODELS/bert/model.torchscript.onnx" --tokenizer "$TMP/wp.json" --labels "$TMP/labels3.txt" --text hi ;;
  text_labels_missing) expect_error 1 "nolabels.txt: no such file" -- run "$MODELS/bert/model.torchscript.onnx" --tokenizer "$TMP/wp.json" --labels "$TMP/nolabels.txt" --text hi ;;
  text_longer_than_profile)
    "$INGOT" build "$MODELS/bert/model.torchscript.onnx" -o "$TMP/bert.ingot" --max-shapes input_ids:2x8,attention_mask:2x8,token_type_ids:2x8 \
      >/dev/null 2>&1 || fail "build failed"
    expect_error 1 "but the engine's profiles take at most 8 (input '" -- run "$TMP/bert.ingot" --tokenizer "$TMP/wp.json" \
      --text "a text of more than eight tokens in all of its words"
    grep -qF "use --max-length 8 to truncate" "$TMP/err" || fail "no --max-length hint" ;;
  *) echo "unknown case $CASE"; exit 1 ;;
esac
