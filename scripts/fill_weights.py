#!/usr/bin/env python3
"""Regenerates the weights of a graph-only model (export_fixtures.py --graph-only) from a seed.

  /usr/bin/python3 scripts/fill_weights.py MODEL.onnx [--seed 0]

Writes the model's external data file (MODEL.weights.bin, the location its initializers name)
beside it: every external float initializer gets values drawn from
N(0, 1/fan-in) (1-D tensors: scales near 1 when named like weight/gamma/scale, else near 0), enough for timing; outputs of such a model mean nothing."""
import argparse
import os
import zlib

import numpy as np
import onnx


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    m = onnx.load(a.model, load_external_data=False)
    size = 0
    tensors = []
    locations = set()
    for t in m.graph.initializer:
        if t.data_location != onnx.TensorProto.EXTERNAL:
            continue
        kv = {e.key: e.value for e in t.external_data}
        off, n = int(kv["offset"]), int(kv["length"])
        tensors.append((t, off, n))
        locations.add(kv["location"])
        size = max(size, off + n)
    if len(locations) != 1:
        raise SystemExit(f"fill_weights.py: error: {a.model}: expected one external data file, found {sorted(locations)}")
    out = os.path.join(os.path.dirname(os.path.abspath(a.model)), locations.pop())
    with open(out, "wb") as f:
        f.truncate(size)
        for t, off, n in tensors:
            rng = np.random.default_rng([a.seed, zlib.crc32(t.name.encode())])
            count = n // 4
            if len(t.dims) == 1 and any(k in t.name.lower() for k in ("weight", "gamma", "scale")) and "bias" not in t.name.lower():
                v = 1.0 + 0.02 * rng.standard_normal(count)
            elif len(t.dims) == 1:
                v = 0.02 * rng.standard_normal(count)
            else:
                # ~1/sqrt(fan-in) keeps activations O(1) through deep stacks (no denormals).
                fan_in = max(1, count // max(t.dims))
                v = rng.standard_normal(count) / np.sqrt(fan_in)
            f.seek(off)
            f.write(v.astype(np.float32).tobytes())
    print(f"{out}: {len(tensors)} tensors, {size} bytes")


if __name__ == "__main__":
    main()
