"""ingot.InferenceSession: metadata, results against the fixtures' reference outputs, errors,
zero-copy inputs and outputs."""
import threading
import warnings

import numpy as np
import pytest

import ingot
from conftest import CLI_MODELS, MODELS

FIXTURES = [(m, e) for m in ("bert", "distilbert", "roberta", "gpt2") for e in ("torchscript", "dynamo")]


def model_path(name, export="torchscript"):
    return str(MODELS / name / f"model.{export}.onnx")


def feeds(name):
    return dict(np.load(MODELS / name / "inputs.npz"))


def test_metadata_bert():
    sess = ingot.InferenceSession(model_path("bert"))
    ins = sess.get_inputs()
    assert [i.name for i in ins] == ["input_ids", "attention_mask", "token_type_ids"]
    for i in ins:
        assert i.type == "tensor(int64)"
        assert i.shape == ["batch", "sequence"]
    (out,) = sess.get_outputs()
    assert out.name == "logits"
    assert out.type == "tensor(float)"
    assert out.shape == ["batch", 2]
    assert "NodeArg(name='logits'" in repr(out)
    assert sess.get_providers() == ["CPUExecutionProvider"]
    assert ingot.get_available_providers() == ["CPUExecutionProvider"]
    meta = sess.get_modelmeta()
    assert isinstance(meta["producer_name"], str)


def test_metadata_gpt2_shape_mixes_ints_and_names():
    (out,) = ingot.InferenceSession(model_path("gpt2")).get_outputs()
    assert out.shape[0] == "batch" and out.shape[-1] == 1000 and len(out.shape) == 3


@pytest.mark.parametrize("name,export", FIXTURES)
def test_run_matches_reference(name, export):
    sess = ingot.InferenceSession(model_path(name, export))
    ref = np.load(MODELS / name / "reference.npz")
    outs = sess.run(None, feeds(name))
    assert len(outs) == len(sess.get_outputs())
    for o, meta in zip(outs, sess.get_outputs()):
        assert isinstance(o, np.ndarray)
        assert o.dtype == ref[meta.name].dtype and o.shape == ref[meta.name].shape
        assert np.abs(o - ref[meta.name]).max() <= 1e-4


def test_selected_output_names_and_none():
    sess = ingot.InferenceSession(model_path("bert"))
    f = feeds("bert")
    (a,) = sess.run(None, f)
    (b,) = sess.run(["logits"], f)
    (c,) = sess.run([], f)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    with pytest.raises(ingot.InvalidArgument, match="has no output 'nope'"):
        sess.run(["nope"], f)


def test_wrong_input_name():
    sess = ingot.InferenceSession(model_path("bert"))
    f = feeds("bert")
    f["nope"] = f.pop("input_ids")
    with pytest.raises(ingot.InvalidArgument, match="has no input 'nope'") as e:
        sess.run(None, f)
    assert isinstance(e.value, RuntimeError) and isinstance(e.value, ingot.Error)


def test_wrong_input_dtype():
    sess = ingot.InferenceSession(model_path("bert"))
    f = feeds("bert")
    f["input_ids"] = f["input_ids"].astype(np.int32)
    with pytest.raises(ingot.InvalidArgument, match="input 'input_ids' has dtype int32, expected int64"):
        sess.run(None, f)


def test_missing_input_and_bad_types():
    sess = ingot.InferenceSession(model_path("bert"))
    f = feeds("bert")
    del f["attention_mask"]
    with pytest.raises(ingot.InvalidArgument, match="'attention_mask' is missing"):
        sess.run(None, f)
    with pytest.raises(TypeError):
        sess.run(None, [1, 2])
    g = feeds("bert")
    g["input_ids"] = np.array(["a", "b"])
    with pytest.raises(ingot.InvalidArgument, match="not supported by ingot"):
        sess.run(None, g)
    g["input_ids"] = None
    with pytest.raises(TypeError, match="input 'input_ids' is None"):
        sess.run(None, g)
    g["input_ids"] = [[1, 2], [3]]
    with pytest.raises(ValueError, match="input 'input_ids' is not an array"):
        sess.run(None, g)


def test_load_errors():
    with pytest.raises(ingot.Error, match="does_not_exist.onnx"):
        ingot.InferenceSession("does_not_exist.onnx")
    with pytest.raises(ingot.Error, match="not_onnx.onnx"):
        ingot.InferenceSession(str(CLI_MODELS / "not_onnx.onnx"))
    with pytest.raises(ingot.InvalidArgument, match="unknown precision 'fp8'"):
        ingot.InferenceSession(model_path("bert"), precision="fp8")


def test_error_quoting_a_name_that_is_not_utf8(tmp_path):
    # A node named with bytes that are not UTF-8 (legal in ONNX): the error still arrives as
    # ingot.Error, the bytes as U+FFFD, not as a UnicodeDecodeError.
    src = (CLI_MODELS / "unknown_op.onnx").read_bytes()
    assert src.count(b"frob_1") == 1
    path = tmp_path / "weird_node.onnx"
    path.write_bytes(src.replace(b"frob_1", b"frob\xff1"))
    with pytest.raises(ingot.Error, match="node 'frob\ufffd1' \\(FrobnicateTensor\\)"):
        ingot.InferenceSession(str(path))
    # A model whose input is so named loads; its NodeArg.name has U+FFFD for the byte.
    src = (CLI_MODELS / "identity.onnx").read_bytes()
    assert src.count(b"\n\x01x") == 2
    path = tmp_path / "weird_input.onnx"
    path.write_bytes(src.replace(b"\n\x01x", b"\n\x01\xff"))
    sess = ingot.InferenceSession(str(path))
    assert [i.name for i in sess.get_inputs()] == ["\ufffd"]
    assert repr(sess.get_inputs()[0]).startswith("NodeArg(name='\ufffd', type='tensor(float)'")


def test_fp16_session_matches_fp32():
    f = feeds("bert")
    want = ingot.InferenceSession(model_path("bert")).run(None, f)
    got = ingot.InferenceSession(model_path("bert"), precision="fp16").run(None, f)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype  # the interface keeps float32
        assert np.abs(a - b).max() <= 1e-2


def test_model_bytes_pathlike_and_list_inputs():
    data = (MODELS / "bert" / "model.torchscript.onnx").read_bytes()
    a = ingot.InferenceSession(data)
    b = ingot.InferenceSession(MODELS / "bert" / "model.torchscript.onnx")  # pathlib.Path
    f = feeds("bert")
    lists = {k: v.tolist() for k, v in f.items()}
    np.testing.assert_allclose(a.run(None, f)[0], b.run(None, lists)[0], atol=1e-6)


def test_session_options_and_providers():
    so = ingot.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ingot.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3  # ORT attributes ingot ignores are accepted
    ref = np.load(MODELS / "bert" / "reference.npz")["logits"]
    for sess in (ingot.InferenceSession(model_path("bert"), sess_options=so),
                 ingot.InferenceSession(model_path("bert"), so, ["CPUExecutionProvider"])):  # ORT's positional order
        assert np.abs(sess.run(None, feeds("bert"))[0] - ref).max() <= 1e-4
        assert sess.get_session_options() is so
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        sess = ingot.InferenceSession(model_path("bert"), providers=["FooExecutionProvider", ("CPUExecutionProvider", {})])
    assert any("FooExecutionProvider" in str(x.message) for x in w)
    assert sess.get_providers() == ["CPUExecutionProvider"]


def test_inputs_are_wrapped_not_copied():
    sess = ingot.InferenceSession(model_path("bert"))
    f = feeds("bert")
    ingot._reset_debug_counters()
    sess.run(None, f)
    c = ingot._debug_counters()
    assert c["inputs_wrapped"] == 3 and c["inputs_copied"] == 0
    # Non-contiguous and byte-swapped arrays are copied once, and give the same result.
    g = {k: np.asfortranarray(np.stack([v, v], axis=2))[:, :, 0] for k, v in f.items()}
    g["token_type_ids"] = f["token_type_ids"].astype(">i8")
    assert not g["input_ids"].flags.c_contiguous
    ingot._reset_debug_counters()
    np.testing.assert_array_equal(sess.run(None, f)[0], sess.run(None, g)[0])
    c = ingot._debug_counters()
    assert c["inputs_copied"] == 3 and c["inputs_wrapped"] == 3


def test_outputs_own_their_buffers():
    sess = ingot.InferenceSession(model_path("gpt2"))
    f = feeds("gpt2")
    (a,) = sess.run(None, f)
    assert a.flags.writeable and a.flags.c_contiguous and not a.flags.owndata  # a capsule owns ingot's buffer
    keep = a.copy()
    a[...] = 0  # writing to one result does not change the next
    (b,) = sess.run(None, f)
    np.testing.assert_array_equal(b, keep)
    del sess  # results outlive the session
    assert float(np.abs(b).sum()) > 0


def test_output_that_is_an_input_is_copied():
    sess = ingot.InferenceSession(str(CLI_MODELS / "identity.onnx"))
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    (y,) = sess.run(None, {"x": x})
    np.testing.assert_array_equal(x, y)
    assert not np.shares_memory(x, y)
    y[0, 0] = 42
    assert x[0, 0] == 0


def test_concurrent_runs():
    sess = ingot.InferenceSession(model_path("bert"))
    f = feeds("bert")
    (ref,) = sess.run(None, f)
    results, errors = [], []

    def work():
        try:
            for _ in range(5):
                results.append(sess.run(None, f)[0])
        except Exception as e:  # pragma: no cover
            errors.append(e)

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors and len(results) == 20
    for r in results:
        np.testing.assert_allclose(r, ref, atol=1e-6)


def test_build_engine_file(tmp_path):
    mlp = str(CLI_MODELS / "mlp.onnx")
    out = tmp_path / "mlp.engine"
    assert ingot.build(mlp, out, shapes={"x": ([1, 4], [2, 4], [8, 4])}) == str(out)
    sess = ingot.InferenceSession(str(out))
    assert [(i.name, i.type) for i in sess.get_inputs()] == [("x", "tensor(float)")]
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    (want,) = ingot.InferenceSession(mlp).run(None, {"x": x})
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], want, atol=1e-5)
    with pytest.raises(ingot.Error, match="'x'"):
        sess.run(None, {"x": np.zeros((16, 4), np.float32)})  # outside the profile
    with pytest.raises(ingot.InvalidArgument, match="sequence of ints"):
        ingot.build(mlp, tmp_path / "x.engine", shapes={"x": ["a"]})
    with pytest.raises(ingot.Error, match="does_not_exist.onnx"):
        ingot.build("does_not_exist.onnx", tmp_path / "y.engine")


def test_build_engine_file_with_float16_io(tmp_path):
    mlp = str(CLI_MODELS / "mlp.onnx")
    out = tmp_path / "mlp16.engine"
    ingot.build(mlp, out, shapes={"x": ([1, 4], [2, 4], [8, 4])}, io_precision="fp16")
    sess = ingot.InferenceSession(str(out))
    assert [(i.name, i.type) for i in sess.get_inputs()] == [("x", "tensor(float16)")]
    assert [o.type for o in sess.get_outputs()] == ["tensor(float16)"]
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float16)
    (want,) = ingot.InferenceSession(mlp).run(None, {"x": x.astype(np.float32)})
    (got,) = sess.run(None, {"x": x})
    assert got.dtype == np.float16
    # The model computes in float32; its output is rounded once, to float16.
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=1e-3, atol=1e-3)
    with pytest.raises(ingot.InvalidArgument, match="io_precision='fp16'"):
        sess.run(None, {"x": x.astype(np.float32)})
    with pytest.raises(ingot.Error, match="io precision"):
        ingot.build(mlp, tmp_path / "z.engine", io_precision="fp8")


def test_build_engine_file_bert(tmp_path):
    out = tmp_path / "bert.engine"
    ingot.build(model_path("bert"), out)
    sess = ingot.InferenceSession(str(out))
    ref = np.load(MODELS / "bert" / "reference.npz")["logits"]
    assert np.abs(sess.run(None, feeds("bert"))[0] - ref).max() <= 1e-4
