"""Writes a ResNet-50 ONNX graph (torchvision's layout, random weights) with explicit
Conv -> BatchNormalization -> Relu, for timing ingot's conv path when no exported ResNet-50 is at
hand. Uses Debian's python3-onnx: /usr/bin/python3 bench/make_resnet50.py OUT.onnx [--batch N]
(default: a dynamic batch dim)."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(0)
nodes, inits = [], []
counter = [0]


def name(p):
    counter[0] += 1
    return f"{p}_{counter[0]}"


def const(p, arr):
    n = name(p)
    inits.append(numpy_helper.from_array(arr.astype(np.float32), n))
    return n


def conv_bn(x, cin, cout, k, stride, relu):
    w = const("w", rng.normal(0, np.sqrt(2.0 / (cin * k * k)), (cout, cin, k, k)))
    c = name("conv")
    nodes.append(helper.make_node("Conv", [x, w], [c], kernel_shape=[k, k], strides=[stride, stride],
                                  pads=[k // 2] * 4))
    b = name("bn")
    nodes.append(helper.make_node(
        "BatchNormalization",
        [c, const("s", rng.uniform(0.2, 0.5, cout)), const("b", rng.normal(0, 0.1, cout)),
         const("m", rng.normal(0, 0.1, cout)), const("v", rng.uniform(0.5, 1.5, cout))], [b], epsilon=1e-5))
    if not relu:
        return b
    r = name("relu")
    nodes.append(helper.make_node("Relu", [b], [r]))
    return r


def bottleneck(x, cin, width, stride):
    cout = width * 4
    y = conv_bn(x, cin, width, 1, 1, True)
    y = conv_bn(y, width, width, 3, stride, True)
    y = conv_bn(y, width, cout, 1, 1, False)
    idn = conv_bn(x, cin, cout, 1, stride, False) if stride != 1 or cin != cout else x
    s = name("add")
    nodes.append(helper.make_node("Add", [y, idn], [s]))
    r = name("relu")
    nodes.append(helper.make_node("Relu", [s], [r]))
    return r


def main():
    out = sys.argv[1]
    batch = int(sys.argv[sys.argv.index("--batch") + 1]) if "--batch" in sys.argv else "batch"
    x = conv_bn("input", 3, 64, 7, 2, True)
    p = name("pool")
    nodes.append(helper.make_node("MaxPool", [x], [p], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    x, cin = p, 64
    for width, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
        for i in range(blocks):
            x = bottleneck(x, cin, width, stride if i == 0 else 1)
            cin = width * 4
    g = name("gap")
    nodes.append(helper.make_node("GlobalAveragePool", [x], [g]))
    f = name("flat")
    nodes.append(helper.make_node("Flatten", [g], [f]))
    fw = const("fc_w", rng.normal(0, 0.01, (1000, 2048)))
    fb = const("fc_b", np.zeros(1000))
    nodes.append(helper.make_node("Gemm", [f, fw, fb], ["logits"], transB=1))
    graph = helper.make_graph(
        nodes, "resnet50", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, 224, 224])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, 1000])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, out)


if __name__ == "__main__":
    main()
