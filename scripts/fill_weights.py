#!/usr/bin/env python3
"""Regenerates the weights of a graph-only model (export_fixtures.py --graph-only) from a seed.

  /usr/bin/python3 scripts/fill_weights.py MODEL.onnx [--seed 0]

Writes the model's external data file (MODEL.weights.bin, the location its initializers name)
beside it. Every external float initializer gets seeded random values:
- Hugging Face models (meta.json beside the model holds the config, with initializer_range r):
  what the model's own _init_weights draws when it is constructed from its config, so that the
  graph runs with the weights of the random-initialised model the issue names: matrices and
  embeddings N(0, r^2) (the padding token's embedding row zero), LayerNorm scales 1, biases 0.
- Other models (torchvision's, no initializer_range): N(0, 1/fan-in) for tensors of rank 2 and
  more (He-like: activations stay O(1) through deep stacks, no denormals), 1-D scales near 1
  when named like weight/gamma/scale, else near 0.
Outputs of either are meaningless, but the arithmetic (and its rounding) is that of a real model
of the same family."""
import argparse
import json
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
    meta_path = os.path.join(os.path.dirname(os.path.abspath(a.model)), "meta.json")
    config = json.load(open(meta_path)).get("config", {}) if os.path.exists(meta_path) else {}
    hf_std = config.get("initializer_range")
    pad_row = config.get("pad_token_id")
    with open(out, "wb") as f:
        f.truncate(size)
        for t, off, n in tensors:
            rng = np.random.default_rng([a.seed, zlib.crc32(t.name.encode())])
            count = n // 4
            scale_like = any(k in t.name.lower() for k in ("weight", "gamma", "scale")) and "bias" not in t.name.lower()
            if hf_std is not None:
                if len(t.dims) == 1:
                    v = np.full(count, 1.0 if scale_like else 0.0)
                else:
                    v = hf_std * rng.standard_normal(count)
                    if "word_embeddings" in t.name and pad_row is not None and pad_row < t.dims[0]:
                        v.reshape(t.dims[0], -1)[pad_row] = 0.0
            elif len(t.dims) == 1 and scale_like:
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
