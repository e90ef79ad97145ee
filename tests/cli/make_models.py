#!/usr/bin/python3
"""Makes the tiny models and tensors of the CLI tests (tests/cli/models/).

Run with Debian's python (python3-onnx, python3-numpy):  /usr/bin/python3 tests/cli/make_models.py
The outputs are committed; rerun only to change them. Deterministic: same bytes every run.
"""
import io
import os
import zipfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "models")
OPSET = [helper.make_opsetid("", 13)]


def save(model, name):
    model.producer_name = "ingot-tests"
    model.producer_version = "1"
    path = os.path.join(OUT, name)
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return path


def model(nodes, inputs, outputs, inits=(), opsets=OPSET, name="g"):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=opsets, ir_version=8)


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


F, I64 = TensorProto.FLOAT, TensorProto.INT64


def newer_ops():
    """models/newer_ops/*.onnx: one node each of the ops of opsets 18-20 (and LpNormalization,
    MaxRoiPool, GridSample on volumes) that Debian's ONNX 1.12 test data lacks; cli.newer_ops_against_ort compares ingot
    with ONNX Runtime on them. Parameters that fix shapes are initializers; X is a graph input."""
    rng = np.random.RandomState(18)  # its own: the files above keep their bytes
    d = os.path.join(OUT, "newer_ops")
    os.makedirs(d, exist_ok=True)

    def one(op, opset, inputs, out_shape, inits=(), out_type=F, order=None, file=None, **attrs):
        names = order or [i.name for i in inputs] + [t.name for t in inits]  # the node's inputs, in its order
        node = helper.make_node(op, names, ["y"], name=op.lower(), **attrs)
        m = model([node], inputs, [vi("y", out_type, out_shape)], inits=inits, opsets=[helper.make_opsetid("", opset)])
        save(m, file or os.path.join("newer_ops", op.lower() + ".onnx"))

    def init(name, array):
        return numpy_helper.from_array(np.asarray(array), name)

    I32 = TensorProto.INT32
    for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor"):
        one(op, 18, [vi("a", I32, [3, 4])], [3, 4], inits=[init("b", rng.randint(-1000, 1000, size=(4,)).astype(np.int32))],
            out_type=I32)
    one("BitwiseNot", 18, [vi("a", I32, [3, 4])], [3, 4], out_type=I32)
    one("LpNormalization", 17, [vi("x", F, [3, 5, 4])], [3, 5, 4], axis=1, p=1)
    one("CenterCropPad", 18, [vi("x", F, [3, 5, 4])], [3, 8, 3], inits=[init("shape", np.array([8, 3], np.int64))], axes=[1, 2])
    col2im_params = [init("image_shape", np.array([5, 6], np.int64)), init("block_shape", np.array([2, 3], np.int64))]
    one("Col2Im", 18, [vi("x", F, [2, 12, 15])], [2, 2, 5, 6], inits=col2im_params, strides=[2, 1], pads=[1, 0, 0, 1])
    # static_shape_error.onnx: the same with 12 columns where the geometry gives 15 sliding positions
    # (an error at load, from shape inference of declared shapes).
    one("Col2Im", 18, [vi("x", F, [2, 12, 12])], [2, 2, 5, 6], inits=col2im_params, strides=[2, 1], pads=[1, 0, 0, 1],
        file="static_shape_error.onnx")
    one("AffineGrid", 20, [vi("theta", F, [2, 2, 3])], [2, 4, 5, 2], inits=[init("size", np.array([2, 3, 4, 5], np.int64))],
        align_corners=0)
    rois = np.array([[0, 0, 0, 6, 5], [1, 1.4, 2.6, 4.5, 7.2], [0, -2, 3, 20, 4]], np.float32)
    one("MaxRoiPool", 1, [vi("x", F, [2, 3, 8, 7])], [3, 3, 2, 3], inits=[init("rois", rois)], pooled_shape=[2, 3],
        spatial_scale=0.75)
    # GridSample on volumes (opset 20): the grid stretched by 1.6 so that points fall outside
    # the volume and the padding modes matter.
    for mode, pad, align in (("linear", "zeros", 0), ("nearest", "border", 1), ("linear", "reflection", 0),
                             ("linear", "reflection", 1)):
        nodes = [helper.make_node("Mul", ["grid", "stretch"], ["g"], name="stretch"),
                 helper.make_node("GridSample", ["x", "g"], ["y"], name="gridsample", mode=mode, padding_mode=pad,
                                  align_corners=align)]
        m = model(nodes, [vi("x", F, [2, 3, 4, 5, 6]), vi("grid", F, [2, 3, 2, 4, 3])], [vi("y", F, [2, 3, 3, 2, 4])],
                  inits=[init("stretch", np.float32(1.6))], opsets=[helper.make_opsetid("", 20)])
        save(m, os.path.join("newer_ops", "gridsample_volume_%s_%s_%d.onnx" % (mode, pad, align)))
    w = rng.uniform(-1, 1, size=(4, 2, 3, 3)).astype(np.float32)
    one("DeformConv", 19, [vi("x", F, [1, 4, 6, 6]), vi("offset", F, [1, 36, 6, 6])], [1, 4, 6, 6],
        inits=[init("w", w), init("b", rng.uniform(-1, 1, size=(4,)).astype(np.float32))], order=["x", "w", "offset", "b"],
        group=2, offset_group=2, pads=[1, 1, 1, 1])


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.RandomState(0)

    # identity.onnx: x float [batch, 4] -> Identity -> y
    save(model([helper.make_node("Identity", ["x"], ["y"], name="id")],
               [vi("x", F, ["batch", 4])], [vi("y", F, ["batch", 4])]), "identity.onnx")

    # two_inputs.onnx: a, b float [batch, 4], each through its own Identity/Dropout; both share 'batch'
    save(model([helper.make_node("Identity", ["a"], ["ya"], name="id_a"),
                helper.make_node("Dropout", ["b"], ["yb"], name="drop_b")],
               [vi("a", F, ["batch", 4]), vi("b", F, ["batch", 4])],
               [vi("ya", F, ["batch", 4]), vi("yb", F, ["batch", 4])]), "two_inputs.onnx")

    # unknown_op.onnx: an op no one implements, in the default domain
    save(model([helper.make_node("Identity", ["x"], ["t"], name="id"),
                helper.make_node("FrobnicateTensor", ["t"], ["y"], name="frob_1")],
               [vi("x", F, ["batch", 4])], [vi("y", F, ["batch", 4])]), "unknown_op.onnx")

    # unknown_domain.onnx: an op of a custom domain
    save(model([helper.make_node("Identity", ["x"], ["y"], name="custom_1", domain="com.example.custom")],
               [vi("x", F, ["batch", 4])], [vi("y", F, ["batch", 4])],
               opsets=OPSET + [helper.make_opsetid("com.example.custom", 1)]), "unknown_domain.onnx")

    # external_data.onnx: an initializer whose data lives in a file that is not there
    w = numpy_helper.from_array(np.ones((4,), np.float32), "w")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "missing_weights.bin"), ("offset", "0"), ("length", "16")):
        e = w.external_data.add()
        e.key, e.value = k, v
    save(model([helper.make_node("Identity", ["w"], ["y"], name="id")], [], [vi("y", F, [4])], inits=[w]),
         "external_data.onnx")

    # mlp.onnx: x [batch, 4] -> MatMul W[4,8] -> Add b -> Relu -> y [batch, 8]
    W = numpy_helper.from_array(rng.randn(4, 8).astype(np.float32), "W")
    B = numpy_helper.from_array(rng.randn(8).astype(np.float32), "B")
    mlp = model([helper.make_node("MatMul", ["x", "W"], ["h"], name="matmul"),
                 helper.make_node("Add", ["h", "B"], ["h2"], name="add"),
                 helper.make_node("Relu", ["h2"], ["y"], name="relu")],
                [vi("x", F, ["batch", 4])], [vi("y", F, ["batch", 8])], inits=[W, B])
    mlp_path = save(mlp, "mlp.onnx")

    # embed.onnx: input_ids int64 [batch, sequence] -> Cast -> Gather(E[10, 4]) -> y; plus a mask
    E = numpy_helper.from_array(rng.randn(10, 4).astype(np.float32), "E")
    save(model([helper.make_node("Cast", ["input_ids"], ["ids32"], to=TensorProto.INT32, name="cast"),
                helper.make_node("Gather", ["E", "ids32"], ["y"], name="embed"),
                helper.make_node("Identity", ["attention_mask"], ["mask_out"], name="id_mask")],
               [vi("input_ids", I64, ["batch", "sequence"]), vi("attention_mask", I64, ["batch", "sequence"])],
               [vi("y", F, ["batch", "sequence", 4]), vi("mask_out", I64, ["batch", "sequence"])], inits=[E]),
         "embed.onnx")

    # undefined_constant.onnx: a Constant whose value tensor has no element type (UNDEFINED)
    value = TensorProto()
    value.dims.extend([4])
    value.data_type = TensorProto.UNDEFINED
    value.raw_data = bytes(16)
    save(model([helper.make_node("Constant", [], ["c"], name="const_1", value=value),
                helper.make_node("Add", ["x", "c"], ["y"], name="add")],
               [vi("x", F, ["batch", 4])], [vi("y", F, ["batch", 4])]), "undefined_constant.onnx")

    # truncated.onnx: mlp.onnx cut in half
    with open(mlp_path, "rb") as f:
        data = f.read()
    with open(os.path.join(OUT, "truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])

    # not_onnx.onnx: a text file with an .onnx name
    with open(os.path.join(OUT, "not_onnx.onnx"), "w") as f:
        f.write("This is a text file, not an ONNX model.\n")

    # Tensors for the input-error cases.
    np.save(os.path.join(OUT, "x_2x4.npy"), rng.rand(2, 4).astype(np.float32))
    np.save(os.path.join(OUT, "x_3x4.npy"), rng.rand(3, 4).astype(np.float32))
    np.save(os.path.join(OUT, "x_int64_2x4.npy"), np.arange(8, dtype=np.int64).reshape(2, 4))
    np.save(os.path.join(OUT, "x_2x4x1.npy"), rng.rand(2, 4, 1).astype(np.float32))
    # Like np.savez_compressed, with a fixed timestamp so the bytes do not change between runs.
    with zipfile.ZipFile(os.path.join(OUT, "identity_in.npz"), "w") as z:
        buf = io.BytesIO()
        np.save(buf, rng.rand(3, 4).astype(np.float32))
        info = zipfile.ZipInfo("x.npy", date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, buf.getvalue())
    newer_ops()


if __name__ == "__main__":
    main()
