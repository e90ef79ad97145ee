#!/usr/bin/env python3
"""Exports the model fixtures ingot is tested on, with PyTorch's outputs as the reference.

Runs where PyTorch, torchvision and transformers are installed (the GPU machine). Models are
randomly initialised from a fixed seed (no hub downloads), exported with both PyTorch
exporters:
  torchscript: torch.onnx.export(..., dynamo=False, opset_version=17)
  dynamo:      torch.onnx.export(..., dynamo=True, opset_version=18)   (torch.export, the default)
Node metadata (which holds source file paths) is stripped from every file.

  python3 scripts/export_fixtures.py --out tests/models            # tiny fixtures, committed
  python3 scripts/export_fixtures.py --out /tmp/full --full         # full-size, for benchmarks

Per model it writes NAME/model.torchscript.onnx, NAME/model.dynamo.onnx, NAME/inputs.npz,
NAME/reference.npz (PyTorch fp32 on CPU) and NAME/meta.json (configs, exporter outcomes, ORT check).
"""
import argparse
import json
import os
import sys
import traceback

import numpy as np
import torch
import torch.nn as nn


def seed_all(seed):
    torch.manual_seed(seed)
    np.random.seed(seed)


class LogitsOnly(nn.Module):
    """Wraps a Hugging Face model so the exported graph has named tensor inputs and one output."""

    def __init__(self, model, input_names):
        super().__init__()
        self.model = model
        self.input_names = input_names

    def forward(self, *args):
        kwargs = dict(zip(self.input_names, args))
        return self.model(**kwargs, return_dict=True).logits


def text_inputs(batch, seq, vocab, with_token_types, seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(3, vocab, size=(batch, seq), dtype=np.int64)
    mask = np.ones((batch, seq), dtype=np.int64)
    if batch > 1:
        mask[1, seq - seq // 3:] = 0  # a padded second sequence
    feeds = {"input_ids": ids, "attention_mask": mask}
    if with_token_types:
        tt = np.zeros((batch, seq), dtype=np.int64)
        tt[:, seq // 2:] = 1
        feeds["token_type_ids"] = tt
    return feeds


def make_text_models(full):
    import transformers as tf
    models = {}
    if full:
        small = {}
    else:
        small = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=128,
                     vocab_size=1000, max_position_embeddings=128)

    def bert():
        cfg = tf.BertConfig(num_labels=2, **small)
        return tf.BertForSequenceClassification(cfg), cfg.vocab_size, True

    def distilbert():
        kw = {} if full else dict(n_layers=2, dim=64, n_heads=2, hidden_dim=128, vocab_size=1000,
                                  max_position_embeddings=128)
        cfg = tf.DistilBertConfig(num_labels=5, **kw)
        return tf.DistilBertForSequenceClassification(cfg), cfg.vocab_size, False

    def roberta():
        kw = dict(small)
        if not full:
            kw["max_position_embeddings"] = 130  # RoBERTa offsets positions by padding_idx + 1
        cfg = tf.RobertaConfig(num_labels=3, **kw)
        return tf.RobertaForSequenceClassification(cfg), cfg.vocab_size, False

    def gpt2():
        kw = dict(n_layer=6, n_embd=768, n_head=12) if full else dict(n_layer=2, n_embd=64, n_head=2,
                                                                        vocab_size=1000, n_positions=128)
        cfg = tf.GPT2Config(use_cache=False, **kw)
        return tf.GPT2LMHeadModel(cfg), cfg.vocab_size, False

    models["bert"] = bert
    models["distilbert"] = distilbert
    models["roberta"] = roberta
    models["gpt2" if not full else "distilgpt2"] = gpt2
    return models


def make_vision_models(full):
    import torchvision

    def resnet18():
        # Full ResNet-18 is 45 MB per file; the committed fixture keeps its topology (BasicBlock
        # [2,2,2,2], stride pattern, downsample shortcuts) at a quarter of the width.
        from torchvision.models.resnet import ResNet, BasicBlock
        if full:
            return torchvision.models.resnet50(num_classes=1000)
        orig = ResNet._make_layer

        def quarter(self, block, planes, blocks, stride=1, dilate=False):
            return orig(self, block, planes // 4, blocks, stride, dilate)

        ResNet._make_layer = quarter
        try:
            m = ResNet(BasicBlock, [2, 2, 2, 2], num_classes=10)
        finally:
            ResNet._make_layer = orig
        m.fc = nn.Linear(128, 10)
        return m

    def mobilenetv3():
        if full:
            return torchvision.models.mobilenet_v3_small(num_classes=1000)
        return torchvision.models.mobilenet_v3_small(num_classes=10, width_mult=0.5)

    return {("resnet50" if full else "resnet18"): resnet18, "mobilenetv3": mobilenetv3}


def strip_metadata(path):
    """Removes node/graph metadata and doc strings: torch.export records source paths there."""
    import onnx
    m = onnx.load(path)

    def clean_graph(g):
        g.doc_string = ""
        if hasattr(g, "metadata_props"):
            del g.metadata_props[:]
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            vi.doc_string = ""
            if hasattr(vi, "metadata_props"):
                del vi.metadata_props[:]
        for n in g.node:
            n.doc_string = ""
            if hasattr(n, "metadata_props"):
                del n.metadata_props[:]
            for a in n.attribute:
                if a.HasField("g"):
                    clean_graph(a.g)
                for sg in a.graphs:
                    clean_graph(sg)

    clean_graph(m.graph)
    for f in m.functions:
        f.doc_string = ""
        if hasattr(f, "metadata_props"):
            del f.metadata_props[:]
        for n in f.node:
            n.doc_string = ""
            if hasattr(n, "metadata_props"):
                del n.metadata_props[:]
    m.doc_string = ""
    onnx.save(m, path)


def strip_weights(path):
    """Makes every float initializer of 1 KiB or more external data in MODEL.weights.bin (one file
    per graph, so both exporters' models of a directory keep their own) and drops the bytes,
    keeping offsets and lengths: the graph file stays small and fill_weights.py rebuilds the file
    from a seed (integer tensors, e.g. position ids, stay inline)."""
    import onnx
    m = onnx.load(path)
    location = os.path.splitext(os.path.basename(path))[0] + ".weights.bin"
    offset = 0
    for t in m.graph.initializer:
        if t.data_type != onnx.TensorProto.FLOAT or len(t.raw_data) < 1024:
            continue
        n = len(t.raw_data)
        t.ClearField("raw_data")
        t.data_location = onnx.TensorProto.EXTERNAL
        del t.external_data[:]
        for k, v in (("location", location), ("offset", str(offset)), ("length", str(n))):
            e = t.external_data.add()
            e.key, e.value = k, v
        offset += (n + 63) // 64 * 64
    onnx.save(m, path)


def export(module, example, input_names, output_names, dyn_axes, path, exporter):
    if exporter == "torchscript":
        torch.onnx.export(module, example, path, dynamo=False, opset_version=17, input_names=input_names,
                          output_names=output_names, dynamic_axes=dyn_axes)
    else:
        per_input = tuple({ax: torch.export.Dim.AUTO for ax in dyn_axes.get(name, {})} for name in input_names)
        # dynamic_shapes mirrors forward()'s signature: LogitsOnly takes *args (one tuple).
        dyn = (per_input,) if isinstance(module, LogitsOnly) else per_input
        try:
            prog = torch.onnx.export(module, example, dynamo=True, opset_version=18, input_names=input_names,
                                     output_names=output_names, dynamic_shapes=dyn)
        except Exception as e:
            print(f"dynamic-shape export failed, exporting static shapes: {str(e)[:2000]}", flush=True)
            prog = torch.onnx.export(module, example, dynamo=True, opset_version=18, input_names=input_names,
                                     output_names=output_names)
        prog.save(path, external_data=False)
    strip_metadata(path)


def ort_check(path, feeds, ref):
    try:
        import onnxruntime as ort
        s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        names = [i.name for i in s.get_inputs()]
        out = s.run(None, {k: feeds[k] for k in names})[0]
        return float(np.max(np.abs(out - ref)))
    except Exception as e:  # the check is informational
        return f"ort failed: {e}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--exporters", default="torchscript,dynamo")
    ap.add_argument("--graph-only", action="store_true",
                    help="move float weights to external data and drop their bytes: full-size models for "
                         "benchmarks travel as small graph files; scripts/fill_weights.py regenerates the weights")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    summary = {}
    builders = {}
    for name, b in make_text_models(args.full).items():
        builders[name] = ("text", b)
    for name, b in make_vision_models(args.full).items():
        builders[name] = ("vision", b)
    only = set(filter(None, args.only.split(",")))
    for seed, (name, (kind, build)) in enumerate(sorted(builders.items())):
        if only and name not in only:
            continue
        seed_all(1234 + seed)
        d = os.path.join(args.out, name)
        os.makedirs(d, exist_ok=True)
        meta = {"name": name, "kind": kind, "seed": 1234 + seed, "torch": torch.__version__}
        if kind == "text":
            model, vocab, token_types = build()
            model.eval()
            feeds = text_inputs(2, 16 if not args.full else 128, vocab, token_types, seed)
            input_names = list(feeds.keys())
            module = LogitsOnly(model, input_names).eval()
            dyn_axes = {n: {0: "batch", 1: "sequence"} for n in input_names}
            output_names = ["logits"]
            dyn_axes["logits"] = {0: "batch"}
            meta["config"] = model.config.to_dict()
        else:
            model = build()
            model.eval()
            size = 64 if not args.full else 224
            rng = np.random.default_rng(seed)
            feeds = {"pixel_values": rng.standard_normal((2, 3, size, size)).astype(np.float32)}
            input_names = ["pixel_values"]
            module = model
            output_names = ["logits"]
            dyn_axes = {"pixel_values": {0: "batch"}, "logits": {0: "batch"}}
        example = tuple(torch.from_numpy(feeds[n]) for n in input_names)
        with torch.no_grad():
            ref = module(*example).float().numpy()
        np.savez(os.path.join(d, "inputs.npz"), **feeds)
        np.savez(os.path.join(d, "reference.npz"), logits=ref)
        meta["exports"] = {}
        for exporter in args.exporters.split(","):
            path = os.path.join(d, f"model.{exporter}.onnx")
            try:
                with torch.no_grad():
                    export(module, example, input_names, output_names, dyn_axes, path, exporter)
                meta["exports"][exporter] = {"ok": True, "bytes": os.path.getsize(path),
                                             "ort_max_abs_diff": ort_check(path, feeds, ref)}
                if args.graph_only:
                    strip_weights(path)
            except Exception as e:
                traceback.print_exc()
                meta["exports"][exporter] = {"ok": False, "error": str(e)[:500]}
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1, default=str)
        summary[name] = meta["exports"]
        print(name, json.dumps(meta["exports"]), flush=True)
    ok = all(v["ok"] for e in summary.values() for v in e.values())
    print("export summary:", "all ok" if ok else "SOME FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
