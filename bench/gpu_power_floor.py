#!/usr/bin/env python3
"""What a model's matrix products alone cost on this GPU, back to back at its power limit and with
the runs apart: the floor under an engine's run that the FLOP count and the big-matmul rate do not
give once the board is power-capped.

Runs on the GPU machine (torch; NVML through libnvidia-ml.so.1). Each workload is a CUDA graph of
fp16 products through cuBLAS(Lt), on random data of the model's magnitudes (activations N(0, 1),
weights N(0, 0.02) as Hugging Face initialises them: the tensor cores' power follows the bits):
  big      four 8192^3 products (the matrix rate the speed table's floor uses)
  bert32   BERT-base at batch 32, sequence 128: 11 layers of the QKV product (4096 x 2304 x 768,
           bias), the attention's output projection (4096 x 768 x 768, bias), FFN 1 (4096 x 3072
           x 768, bias and GELU in cuBLASLt's epilogue) and FFN 2 (4096 x 768 x 3072, bias), each
           layer with its own weights; every layer reads the same input (so the data's statistics
           stay those of a LayerNorm's output) and FFN 2 reads FFN 1's output. No attention core,
           LayerNorm, embedding or classifier: a lower bound on those 11 layers' products.
  qkv, out, ffn1, ffn2   one of those products, 11 times with the 11 layers' weights
  ffn1_plain   FFN 1 with its bias and no GELU: what the GELU epilogue costs
For each: back to back (replays enqueued one after another for --seconds after a --settle
warm-up, so the board reaches its power-limited clock; ms a replay from events around blocks of
replays, mJ a replay from the board's energy counter, the SM clock sampled between blocks) and
apart (--apart-ms of host sleep before each replay, events around it: the full clock).

    python3 bench/gpu_power_floor.py [--workloads big,bert32,...] [--json out.json]
"""
import argparse
import ctypes
import json
import statistics
import time

import torch


class Nvml:
    """The board's energy counter (mJ) and SM clock (MHz), or None where NVML is missing."""

    def __init__(self, index):
        try:
            self.lib = ctypes.CDLL("libnvidia-ml.so.1")
            if self.lib.nvmlInit_v2() != 0:
                raise OSError("nvmlInit_v2")
            self.handle = ctypes.c_void_p()
            if self.lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(self.handle)) != 0:
                raise OSError("nvmlDeviceGetHandleByIndex_v2")
        except OSError:
            self.lib = None

    def energy_mj(self):
        if not self.lib:
            return None
        v = ctypes.c_ulonglong()
        return v.value if self.lib.nvmlDeviceGetTotalEnergyConsumption(self.handle, ctypes.byref(v)) == 0 else None

    def sm_mhz(self):
        if not self.lib:
            return None
        v = ctypes.c_uint()
        return v.value if self.lib.nvmlDeviceGetClockInfo(self.handle, 1, ctypes.byref(v)) == 0 else None


def randn(*shape, std=1.0):
    return (torch.randn(*shape, device="cuda") * std).half()


def bert32_layers(layers=11, m=4096, e=768, f=3072):
    torch.manual_seed(0)
    x = randn(m, e)
    w = [dict(qkv=randn(e, 3 * e, std=0.02), bqkv=randn(3 * e, std=0.02), out=randn(e, e, std=0.02),
              bout=randn(e, std=0.02), w1=randn(e, f, std=0.02), b1=randn(f, std=0.02),
              w2=randn(f, e, std=0.02), b2=randn(e, std=0.02)) for _ in range(layers)]
    return x, w


def workloads(names):
    x, w = bert32_layers()
    m, e, f = 4096, 768, 3072
    qkv_y, out_y = torch.empty(m, 3 * e, device="cuda", dtype=torch.half), torch.empty(m, e, device="cuda", dtype=torch.half)
    h = {}  # FFN 1's output, allocated from the graph's pool at capture
    y = torch.empty(m, e, device="cuda", dtype=torch.half)

    def qkv(l):
        torch.addmm(l["bqkv"], x, l["qkv"], out=qkv_y)

    def out(l):
        torch.addmm(l["bout"], x, l["out"], out=out_y)

    def ffn1(l):
        h["ffn1"] = torch._addmm_activation(l["b1"], x, l["w1"], use_gelu=True)

    def ffn1_plain(l):
        h["ffn1"] = torch.addmm(l["b1"], x, l["w1"])

    def ffn2(l):
        torch.addmm(l["b2"], h["ffn1"], l["w2"], out=y)

    flop = dict(qkv=2 * m * e * 3 * e, out=2 * m * e * e, ffn1=2 * m * e * f, ffn2=2 * m * f * e)
    flop["ffn1_plain"] = flop["ffn1"]
    big_a, big_b = randn(8192, 8192), randn(8192, 8192, std=0.02)
    big_c = torch.empty(8192, 8192, device="cuda", dtype=torch.half)
    table = {
        "big": (lambda: [torch.mm(big_a, big_b, out=big_c) for _ in range(4)], 4 * 2 * 8192**3),
        "bert32": (lambda: [op(l) for l in w for op in (qkv, out, ffn1, ffn2)],
                   len(w) * (flop["qkv"] + flop["out"] + flop["ffn1"] + flop["ffn2"])),
    }
    h_alone = torch._addmm_activation(w[0]["b1"], x, w[0]["w1"], use_gelu=True)  # what FFN 2 alone reads

    def ffn2_alone(l):
        torch.addmm(l["b2"], h_alone, l["w2"], out=y)

    for name, op in dict(qkv=qkv, out=out, ffn1=ffn1, ffn1_plain=ffn1_plain, ffn2=ffn2_alone).items():
        table[name] = ((lambda op=op: [op(l) for l in w]), len(w) * flop[name])
    unknown = [n for n in names if n not in table]
    if unknown:
        raise SystemExit(f"gpu_power_floor: unknown workload {unknown[0]!r}; expected one of {', '.join(table)}")
    return {n: table[n] for n in names}


def capture(fn):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    torch.cuda.synchronize()
    return g


def back_to_back(g, nvml, settle_s, seconds, block):
    end = time.time() + settle_s
    while time.time() < end:
        for _ in range(block):
            g.replay()
        torch.cuda.synchronize()
    per_run, clocks = [], []
    e0, t0, runs = nvml.energy_mj(), time.time(), 0
    while time.time() - t0 < seconds:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(block):
            g.replay()
        b.record()
        b.synchronize()
        clocks.append(nvml.sm_mhz())
        per_run.append(a.elapsed_time(b) / block)
        runs += block
    e1 = nvml.energy_mj()
    mj = (e1 - e0) / runs if e0 is not None and e1 is not None else None
    clocks = [c for c in clocks if c is not None]
    return statistics.median(per_run), mj, (statistics.median(clocks) if clocks else None)


def apart(g, nvml, apart_ms, runs):
    times, clocks = [], []
    for _ in range(runs):
        time.sleep(apart_ms / 1000)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
        clocks.append(nvml.sm_mhz())
    clocks = [c for c in clocks if c is not None]
    return statistics.median(times), (statistics.median(clocks) if clocks else None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workloads", default="big,bert32,qkv,out,ffn1,ffn2")
    ap.add_argument("--settle", type=float, default=1.5, help="seconds of back-to-back replays before timing")
    ap.add_argument("--seconds", type=float, default=2.0, help="seconds of timed back-to-back replays")
    ap.add_argument("--block", type=int, default=20, help="replays between two events back to back")
    ap.add_argument("--apart-ms", type=float, default=2.0)
    ap.add_argument("--apart-runs", type=int, default=200)
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    nvml = Nvml(torch.cuda.current_device())
    rows = []
    for name, (fn, flop) in workloads(args.workloads.split(",")).items():
        g = capture(fn)
        ms, mj, mhz = back_to_back(g, nvml, args.settle, args.seconds, args.block)
        ms_apart, mhz_apart = apart(g, nvml, args.apart_ms, args.apart_runs)
        rows.append(dict(workload=name, gflop=flop / 1e9, ms=ms, tflops=flop / ms / 1e9, mj=mj, sm_mhz=mhz,
                         watts=(mj / ms if mj else None), ms_apart=ms_apart, tflops_apart=flop / ms_apart / 1e9,
                         sm_mhz_apart=mhz_apart, pj_per_flop=(mj * 1e9 / flop if mj else None)))
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    print("| workload | GFLOP | back to back ms | TFLOP/s | SM MHz | mJ a run | W | pJ/FLOP | apart ms | TFLOP/s | SM MHz |")
    print("| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |")
    fmt = lambda v, f: "–" if v is None else format(v, f)
    for r in rows:
        print(f"| {r['workload']} | {r['gflop']:.1f} | {r['ms']:.4f} | {r['tflops']:.0f} | {fmt(r['sm_mhz'], '.0f')} | "
              f"{fmt(r['mj'], '.1f')} | {fmt(r['watts'], '.0f')} | {fmt(r['pj_per_flop'], '.3f')} | {r['ms_apart']:.4f} | "
              f"{r['tflops_apart']:.0f} | {fmt(r['sm_mhz_apart'], '.0f')} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
