#!/usr/bin/env python3
"""CUDA speed table: ingot fp16 engines against PyTorch fp16 (eager and torch.compile), with a
hardware floor per model and shape.

Runs on the GPU machine (torch, torchvision, transformers, onnx, numpy; no network). Models are
full size and randomly initialised from fixed seeds (no hub downloads):
  distilbert  DistilBertForSequenceClassification(DistilBertConfig(num_labels=2))
  bert        BertForSequenceClassification(BertConfig())        (BERT-base, 2 labels)
  distilgpt2  GPT2LMHeadModel(GPT2Config(n_layer=6, use_cache=False))   (logits over the vocabulary)
  resnet50    torchvision.models.resnet50(weights=None)
Text models get input_ids (random ids in [3, vocab)) and attention_mask (all ones), no
token_type_ids; ResNet-50 gets pixel_values (standard normal) at 3x224x224.
Shapes: batch 1 and 32 (--batches), sequence 128 (--seq).

Per model:
  1. export to ONNX fp32 in the work dir (TorchScript exporter, opset 17, dynamic batch/sequence
     axes, metadata stripped); reused on later calls while the work dir holds it (--re-export).
  2. ingot: `ingot build --device cuda --precision fp16` with min b1 / opt b32 / max b32, then one
     `ingot bench --device cuda --json` per shape: the GPU compute median (CUDA events recorded by
     the graph's first and last nodes: results[0].ingot.gpu_compute.median_ms) and the end-to-end median
     (results[0].ingot.median_ms, wall clock including host<->device copies).
  3. PyTorch fp16 (model.half() on cuda, inputs on cuda, torch.inference_mode(),
     cudnn.benchmark on, ResNet-50 in channels_last): eager, torch.compile default,
     "reduce-overhead" and "max-autotune", each compiled per shape with dynamic=False. The timed
     calls run back to back as ingot bench's runs do (enqueued one after another, a CUDA event
     between each two: each interval is one call's GPU time while the GPU never waits for the
     host); --torch-back-to-back 0, or --idle-ms, times one call at a time instead (events around
     it, a synchronize after it); the medians are compared with ingot's GPU compute median. CUDA-graph modes call
     torch.compiler.cudagraph_mark_step_begin() before every call (outputs are not kept).
  4. floor: max(FLOPs / matrix rate, fp16 weight bytes / copy bandwidth), where FLOPs come from
     torch.utils.flop_counter.FlopCounterMode on the fp16 model (a multiply-add is 2 FLOPs), the
     rate from an 8192^3 fp16 torch.matmul and the bandwidth from a 2 GiB device-to-device copy
     (bytes read + written), both measured once per call.
  5. --check-accuracy: `ingot run --device cuda --inputs in.npz --save-outputs out.npz` on the same
     inputs as PyTorch fp32 (TF32 off): max abs diff and argmax agreement; PyTorch fp16 eager
     against the same fp32 reference is printed alongside, for scale.
  6. clocks: nvidia-smi samples the SM clock, board power and utilization every 100 ms while
     ingot's bench and each PyTorch mode's warm-up and timed calls run; the medians of the busy
     samples are a table of their own (a clock below the maximum means a power-capped row).

Results accumulate in WORK/results.json across calls (while the machine keeps the work dir;
--fresh starts over); --json also writes them where you want them (e.g. $OUT/...). The table
printed last holds everything accumulated. Calls made on separate machines are combined with
--merge, which needs no GPU and no torch:
  python3 bench/gpu_bench.py --merge a.json b.json c.json [--json all.json]

Typical split (the device allows 10 minutes a call and may hand out a fresh machine each time,
so write --json under $OUT every call and --merge the files afterwards; --json is rewritten after
every step, so a call that is cut off still returns what it measured; stderr holds exporter
warnings and max-autotune's autotuning reports, keep it out of the returned tail):
  python3 bench/gpu_bench.py --ingot build/ingot --modes eager,default,reduce-overhead --check-accuracy \
      --time-budget 500 --json $OUT/a.json >$OUT/a.log 2>$OUT/a.err; tail -c 6000 $OUT/a.log
  python3 bench/gpu_bench.py --skip-ingot --modes max-autotune --models distilbert,bert \
      --time-budget 300 --json $OUT/b.json >$OUT/b.log 2>$OUT/b.err; tail -c 6000 $OUT/b.log
  python3 bench/gpu_bench.py --quick ...                  # smoke test: few iterations
With max-autotune among other modes, every model gets its ingot figures and the other modes first
and max-autotune afterwards, model by model while --time-budget lasts. --inductor-cache DIR keeps
torch.compile's caches there; carried to the next machine of the same kind (scripts/gpu-session.sh
--inductor-cache does it through .gpu), max-autotune loads its choices there instead of spending
minutes a shape autotuning again, so every mode fits one call.
--idle-ms MS times every side with MS of idle before each timed run (`ingot bench --idle-time`, a
sleep before each PyTorch call): the latency of requests that arrive apart, with the GPU at its
full clock, where back to back (the default) a batch-32 run holds the board at its power limit.
Results of both kinds are never merged into one table (the work dir and --merge refuse it).
Back to back, both sides hold the GPU busy the same way: a batch-32 run at the board's power
limit is timed at the clock that limit allows, on both sides. Before developer session 40 the
PyTorch calls were synchronized one at a time (--torch-back-to-back 0), which leaves the GPU idle
between calls (for the host's launch and synchronize, and the spin below) and so let PyTorch run
at a higher clock than ingot's back-to-back runs; such runs do not merge with back-to-back ones.
A call timed alone would have its start event recorded on an idle GPU before the host has
launched the call; --torch-prime-us US (default 200) runs a spin kernel first (before each call
timed alone, before the first of a back-to-back series), so the GPU is busy while the host
launches and the events time the GPU work, as ingot's events, the first and last nodes of its
graph, do (0: the launch counted, as tables before developer session 39 did; such runs do not
merge with primed ones).
Besides the CUDA-event median, each PyTorch mode gets a profiler pass (--no-kernel-time skips
it): its kernel-busy time per call (sum of kernel and memcpy durations), a lower bound on its GPU
time without host overhead, shown in parentheses in the table.
"""
import argparse
import copy
import datetime
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

from gpu_bench_doc import (BUSY_PERCENT, DISPLAY, MODELS, MODES, TIMING_SETTINGS, entry_key, floor_of,
                           floor_rates_of, fmt, load_doc, merge_into, new_doc, render, run_setting, save_doc)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEEDS = {"distilbert": 1001, "bert": 1002, "distilgpt2": 1003, "resnet50": 1004}
CUDAGRAPH_MODES = {"reduce-overhead", "max-autotune"}
SLOW_MODE = "max-autotune"  # minutes of compilation per model and shape: run last (main)

T_START = time.time()


def log(msg):
    now = datetime.datetime.now().strftime("%H:%M:%S")
    print(f"[{now} +{time.time() - T_START:6.1f}s] {msg}", flush=True)


def one_line(e, limit=300):
    s = " ".join(str(e).split())
    return s if len(s) <= limit else s[:limit] + "..."


def is_text(name):
    return name != "resnet50"


def shape_tag(batch, seq):
    return f"b{batch}_s{seq if seq is not None else '-'}"


def shape_spec(model, batch, seq):
    """trtexec spelling of the input shapes."""
    if is_text(model):
        return f"input_ids:{batch}x{seq},attention_mask:{batch}x{seq}"
    return f"pixel_values:{batch}x3x224x224"


def out_of_time(args, what, need_s=0.0):
    """True (and noted) when --time-budget is spent, or would be by a step expected to take need_s
    seconds: the step `what` is skipped, the table still printed. (A max-autotune compile takes
    minutes: one started just inside the budget ran past the caller's time limit and lost the
    whole table, developer session 29.)"""
    if args.time_budget and time.time() - T_START + need_s > args.time_budget:
        args.skipped.append(what)
        why = "spent" if need_s <= 0 else f"too short for the ~{need_s:.0f} s this step took on the last shape"
        log(f"  skipped (--time-budget {args.time_budget:g} s {why}): {what}")
        return True
    return False


def smi_gpu_args():
    """nvidia-smi's -i for the one GPU this process sees, when CUDA_VISIBLE_DEVICES names one by
    PCI bus order (scripts/gpu-table.sh runs a process per GPU that way); [] otherwise (GPU 0)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    if os.environ.get("CUDA_DEVICE_ORDER") == "PCI_BUS_ID" and visible.isdigit():
        return ["-i", visible]
    return []


class ClockSampler:
    """The SM clock, board power and utilization while a measurement runs: nvidia-smi every 100 ms
    in the background. A loop held for tens of seconds brings an H100 to its 700 W cap with the
    clock 10-15 % below its maximum (developer session 28); the benchmark's timed runs, each
    synchronized, did not reach it (session 29), so a row's times mean most beside the clocks
    they ran at. Without nvidia-smi it records nothing."""

    def __init__(self):
        self.proc, self.out, self.lines = None, None, []

    def __enter__(self):
        try:
            self.out = tempfile.TemporaryFile(mode="w+")
            self.proc = subprocess.Popen(["nvidia-smi", *smi_gpu_args(), "--query-gpu=clocks.sm,power.draw,utilization.gpu",
                                          "--format=csv,noheader,nounits", "-lms", "100"],
                                         stdout=self.out, stderr=subprocess.DEVNULL, text=True)
        except Exception:  # noqa: BLE001
            self.proc = None
        return self

    def __exit__(self, *exc):
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except Exception:  # noqa: BLE001
                self.proc.kill()
            self.out.seek(0)
            self.lines = self.out.read().splitlines()
        if self.out is not None:
            self.out.close()
        return False

    def summary(self):
        return clock_summary(self.lines)




def number(parts, i):
    """parts[i] as a float; None when missing or not a number (nvidia-smi's "[N/A]")."""
    try:
        return float(parts[i])
    except (ValueError, IndexError):
        return None


def clock_summary(lines):
    """Median and lowest SM clock (MHz) and median power (W) of nvidia-smi lines "MHz, W, %", over
    the samples whose utilization is at least BUSY_PERCENT (the ingot side's sampler also spans
    loading the engine and capturing its graph), else over all; None when no line parses."""
    samples = []
    for line in lines:
        parts = [x.strip() for x in line.split(",")]
        c, w, u = (number(parts, i) for i in range(3))
        if c is not None and w is not None:
            samples.append((c, w, u))
    if not samples:
        return None
    busy = [x for x in samples if x[2] is not None and x[2] >= BUSY_PERCENT]
    used = busy or samples
    clocks, watts = [x[0] for x in used], [x[1] for x in used]
    return {"sm_mhz_median": statistics.median(clocks), "sm_mhz_min": min(clocks),
            "power_w_median": statistics.median(watts), "samples": len(samples), "busy_samples": len(busy)}


# ---------------------------------------------------------------------------------------------
# everything below needs torch


def device_info(torch, ingot_path):
    info = {}
    p = torch.cuda.get_device_properties(0)
    info["name"] = torch.cuda.get_device_name(0)
    info["memory_gib"] = p.total_memory / 2**30
    info["sm_count"] = p.multi_processor_count
    info["capability"] = f"{p.major}.{p.minor}"
    info["torch"] = torch.__version__
    info["cuda"] = torch.version.cuda
    info["cudnn"] = torch.backends.cudnn.version()
    info["python"] = platform.python_version()
    for mod in ("transformers", "torchvision", "onnx", "numpy"):
        try:
            info[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001
            info[mod] = None
    try:
        q = subprocess.run(["nvidia-smi", *smi_gpu_args(), "--query-gpu=driver_version,clocks.max.sm,clocks.max.mem,power.limit",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        parts = [x.strip() for x in q.stdout.strip().splitlines()[0].split(",")] if q.returncode == 0 else []
        if parts:
            info["driver"] = parts[0]
            info["nvidia_smi"] = ", ".join(parts)
    except Exception:  # noqa: BLE001
        info.setdefault("driver", None)
    return info


def measure_floors(torch, quick):
    """fp16 matrix rate (8192^3 torch.matmul) and device copy bandwidth (2 GiB, read + write)."""
    reps = 3 if quick else 10
    n = 8192
    g = torch.Generator(device="cuda").manual_seed(7)
    a = torch.randn(n, n, device="cuda", dtype=torch.float16, generator=g)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16, generator=g)
    for _ in range(3):
        torch.matmul(a, b)
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        torch.matmul(a, b)
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    mm_ms = statistics.median(ts)
    del a, b
    nbytes = 2 * 2**30
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    src.random_(0, 255, generator=g)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        dst.copy_(src)
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    cp_ms = statistics.median(ts)
    del src, dst
    gc.collect()
    torch.cuda.empty_cache()
    return {"matmul_ms": mm_ms, "matmul_fp16_tflops": 2 * n**3 / (mm_ms * 1e-3) / 1e12,
            "copy_ms": cp_ms, "copy_bandwidth_tbps": 2 * nbytes / (cp_ms * 1e-3) / 1e12, "floor_reps": reps}


class Logits:
    """Factory for a module that takes tensors positionally and returns the logits tensor only."""

    @staticmethod
    def wrap(torch, model, input_names, extra):
        class _Logits(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, *args):
                kwargs = dict(zip(input_names, args))
                return self.model(**kwargs, **extra).logits

        return _Logits().eval()


def build_model(torch, name):
    """fp32 CPU module (eval) with positional tensor inputs and one logits output; input names;
    vocab size (None for images)."""
    torch.manual_seed(SEEDS[name])
    if name == "resnet50":
        import torchvision
        m = torchvision.models.resnet50(weights=None).eval()
        return m, ["pixel_values"], None, {}
    import transformers as tf
    if name == "distilbert":
        cfg = tf.DistilBertConfig(num_labels=2)
        m = tf.DistilBertForSequenceClassification(cfg)
        extra = {"return_dict": True}
    elif name == "bert":
        cfg = tf.BertConfig(num_labels=2)
        m = tf.BertForSequenceClassification(cfg)
        extra = {"return_dict": True}
    elif name == "distilgpt2":
        cfg = tf.GPT2Config(n_layer=6, use_cache=False)
        m = tf.GPT2LMHeadModel(cfg)
        extra = {"return_dict": True, "use_cache": False}
    else:
        raise ValueError(f"unknown model {name}")
    m.eval()
    names = ["input_ids", "attention_mask"]
    info = {"attn_implementation": getattr(m.config, "_attn_implementation", None),
            "parameters": sum(p.numel() for p in m.parameters())}
    return Logits.wrap(torch, m, names, extra), names, cfg.vocab_size, info


def make_inputs(np, name, vocab, batch, seq):
    rng = np.random.default_rng(SEEDS[name] * 1000 + batch * 7 + (seq or 0))
    if vocab is not None:
        ids = rng.integers(3, vocab, size=(batch, seq), dtype=np.int64)
        return {"input_ids": ids, "attention_mask": np.ones((batch, seq), dtype=np.int64)}
    return {"pixel_values": rng.standard_normal((batch, 3, 224, 224)).astype(np.float32)}


def export_onnx(torch, module, names, vocab, path, meta_path, meta, re_export):
    import numpy as np
    if not re_export and os.path.exists(path) and os.path.exists(meta_path):
        try:
            with open(meta_path) as f:
                old = json.load(f)
            if old == meta:
                log(f"  reusing {path}")
                return
        except Exception:  # noqa: BLE001
            pass
    sys.path.insert(0, os.path.join(REPO, "scripts"))
    from export_fixtures import strip_metadata
    ex = make_inputs(np, meta["model"], vocab, 2, 128 if vocab else None)
    example = tuple(torch.from_numpy(ex[n]) for n in names)
    if vocab is not None:
        dyn = {n: {0: "batch", 1: "sequence"} for n in names}
    else:
        dyn = {"pixel_values": {0: "batch"}}
    dyn["logits"] = {0: "batch"} if meta["model"] != "distilgpt2" else {0: "batch", 1: "sequence"}
    t0 = time.time()
    with torch.no_grad():
        torch.onnx.export(module, example, path, dynamo=False, opset_version=17, input_names=names,
                          output_names=["logits"], dynamic_axes=dyn)
    strip_metadata(path)
    with open(meta_path, "w") as f:
        json.dump(meta, f)
    log(f"  exported {path} ({os.path.getsize(path) / 2**20:.0f} MiB) in {time.time() - t0:.1f} s")


def error_line(stdout, stderr):
    lines = [l.strip() for l in (stderr or "").splitlines() + (stdout or "").splitlines() if l.strip()]
    for l in lines:
        if "error" in l.lower():
            return one_line(l)
    return one_line(lines[-1]) if lines else "no output"


def run_cmd(cmd, log_path, timeout):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        with open(log_path, "w") as f:
            f.write(" ".join(cmd) + f"\n\nTIMEOUT after {timeout} s\n{e.stdout or ''}\n{e.stderr or ''}")
        return None, time.time() - t0, f"timed out after {timeout} s"
    except OSError as e:
        return None, time.time() - t0, one_line(e)
    with open(log_path, "w") as f:
        f.write(" ".join(cmd) + f"\n\nexit {p.returncode}\n--- stdout\n{p.stdout}\n--- stderr\n{p.stderr}")
    if p.returncode != 0:
        return p, time.time() - t0, f"exit {p.returncode}: {error_line(p.stdout, p.stderr)}"
    return p, time.time() - t0, None


def ingot_build(args, model, onnx_path, engine_path, wdir, seq):
    if args.reuse_engines and os.path.exists(engine_path):
        log(f"  reusing engine {engine_path}")
        return None, {"reused": True}
    mn = shape_spec(model, 1, seq)
    opt = shape_spec(model, args.opt_batch, seq)
    mx = shape_spec(model, max(max(args.batches), args.opt_batch), seq)
    cmd = [args.ingot, "build", onnx_path, "-o", engine_path, "--device", "cuda", "--precision", "fp16",
           "--min-shapes", mn, "--opt-shapes", opt, "--max-shapes", mx, "--io-precision", args.io_precision]
    log("  " + " ".join(cmd))
    p, dt, err = run_cmd(cmd, os.path.join(wdir, "ingot_build.log"), args.ingot_timeout)
    info = {"build_s": dt, "build_cmd": " ".join(cmd)}
    if err:
        log(f"  ingot build FAILED ({dt:.1f} s): {err}")
        return err, info
    info["build_stdout_tail"] = p.stdout[-1500:]
    log(f"  ingot build ok in {dt:.1f} s ({os.path.getsize(engine_path) / 2**20:.0f} MiB)")
    return None, info


def ingot_bench(args, model, engine_path, wdir, batch, seq):
    out_json = os.path.join(wdir, f"bench_{shape_tag(batch, seq)}.json")
    if os.path.exists(out_json):
        os.remove(out_json)
    cmd = [args.ingot, "bench", engine_path, "--device", "cuda", "--shapes", shape_spec(model, batch, seq),
           "--iterations", str(args.iterations), "--warmup-ms", str(args.warmup_ms),
           "--duration", str(args.ingot_duration), "--json", out_json]
    if args.idle_ms > 0:
        cmd += ["--idle-time", str(args.idle_ms)]
    log("  " + " ".join(cmd))
    with ClockSampler() as clocks:
        p, dt, err = run_cmd(cmd, os.path.join(wdir, f"ingot_bench_{shape_tag(batch, seq)}.log"), args.ingot_timeout)
    res = {"bench_cmd": " ".join(cmd), "bench_s": dt, "clocks": clocks.summary()}
    if err:
        res["error"] = "bench " + err
        log(f"  ingot bench FAILED: {err}")
        return res
    try:
        with open(out_json) as f:
            j = json.load(f)
        r = j["results"][0]["ingot"]
        res["e2e_median_ms"] = r.get("median_ms")
        res["e2e"] = {k: v for k, v in r.items() if not isinstance(v, (dict, list))}
        gc_ = r.get("gpu_compute")
        if isinstance(gc_, dict):
            res["gpu_median_ms"] = gc_.get("median_ms")
            res["gpu_compute"] = {k: v for k, v in gc_.items() if not isinstance(v, (dict, list))}
        else:
            res["gpu_median_ms"] = None
            res["note"] = "no results[0].ingot.gpu_compute in the bench JSON"
        res["label"] = j["results"][0].get("label")
    except Exception as e:  # noqa: BLE001
        res["error"] = f"bench JSON unreadable: {one_line(e)}"
        log(f"  ingot bench JSON unreadable: {e}")
        return res
    log(f"  ingot b{batch}: GPU compute median {fmt(res.get('gpu_median_ms'))} ms, "
        f"end-to-end median {fmt(res.get('e2e_median_ms'))} ms")
    return res


def ingot_outputs(args, engine_path, wdir, feeds, batch, seq):
    import numpy as np
    in_npz = os.path.join(wdir, f"acc_in_{shape_tag(batch, seq)}.npz")
    out_npz = os.path.join(wdir, f"acc_out_{shape_tag(batch, seq)}.npz")
    if args.io_precision == "fp16":  # the engine takes the model's float32 inputs as float16
        feeds = {k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in feeds.items()}
    np.savez(in_npz, **feeds)
    if os.path.exists(out_npz):
        os.remove(out_npz)
    cmd = [args.ingot, "run", engine_path, "--device", "cuda", "--inputs", in_npz, "--save-outputs", out_npz]
    log("  " + " ".join(cmd))
    _, _, err = run_cmd(cmd, os.path.join(wdir, f"ingot_run_{shape_tag(batch, seq)}.log"), args.ingot_timeout)
    if err:
        raise RuntimeError("ingot run " + err)
    with np.load(out_npz) as z:
        key = "logits" if "logits" in z.files else z.files[0]
        return z[key].astype(np.float32)


def compare(np, out, ref):
    out = np.asarray(out, dtype=np.float32)
    if out.shape != ref.shape:
        if out.size == ref.size:
            out = out.reshape(ref.shape)
        else:
            return {"error": f"shape {list(out.shape)} vs reference {list(ref.shape)}"}
    d = np.abs(out - ref)
    ref_max = float(np.max(np.abs(ref)))
    return {"max_abs_diff": float(np.max(d)), "mean_abs_diff": float(np.mean(d)),
            "rel_max_abs_diff": float(np.max(d)) / ref_max if ref_max > 0 else float("nan"),
            "argmax_agree": float(np.mean(np.argmax(out, -1) == np.argmax(ref, -1))),
            "nonfinite": int(np.size(out) - np.count_nonzero(np.isfinite(out)))}


# Spin cycles a microsecond of --torch-prime-us: the highest SM clock of an H100 or H200 (a lower
# clock spins longer, which only widens the margin).
PRIME_CYCLES_PER_US = 2000


def time_torch(torch, fn, args, iters, warmup_s, warmup_iters, cudagraph, idle_ms=0.0, prime_us=0.0,
               back_to_back=False):
    """Median of per-call CUDA-event times. back_to_back: the calls enqueued one after another with
    an event between each two (interval i is call i's GPU time while the host keeps ahead; where it
    does not, as in eager mode, the host's pace), synchronized once at the end; the wall clock is
    then the series' mean. Otherwise one call at a time, events around it and a synchronize after
    it, each call after idle_ms asleep (--idle-ms). With prime_us a spin kernel
    (torch.cuda._sleep) runs before the (first) start event: the GPU is busy while the host
    launches the call, so the start event is recorded when the spin ends, by then (for calls that
    launch within prime_us) behind the call's work, and the time is the GPU's alone, as ingot's
    graph-recorded events are. The wall clock (logged, not tabled) then includes what is left of
    the spin when the call is launched."""
    mark = torch.compiler.cudagraph_mark_step_begin if cudagraph else (lambda: None)
    t0 = time.perf_counter()
    mark()
    out = fn(*args)
    torch.cuda.synchronize()
    first_s = time.perf_counter() - t0
    out_shape = list(out.shape)
    del out
    with ClockSampler() as clocks:
        n, start = 0, time.perf_counter()
        while n < warmup_iters or time.perf_counter() - start < warmup_s:
            mark()
            fn(*args)
            n += 1
        torch.cuda.synchronize()
        if back_to_back:
            marks = [torch.cuda.Event(enable_timing=True) for _ in range(iters + 1)]
            if prime_us > 0:
                torch.cuda._sleep(int(prime_us * PRIME_CYCLES_PER_US))
            w0 = time.perf_counter()
            marks[0].record()
            for e in marks[1:]:
                mark()
                fn(*args)
                e.record()
            marks[-1].synchronize()
            wall = [(time.perf_counter() - w0) * 1e3 / iters]
            evs = list(zip(marks[:-1], marks[1:]))
        else:
            evs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
            wall = []
            for s, e in evs:
                if idle_ms > 0:
                    time.sleep(idle_ms / 1e3)
                mark()
                if prime_us > 0:
                    torch.cuda._sleep(int(prime_us * PRIME_CYCLES_PER_US))
                w0 = time.perf_counter()
                s.record()
                fn(*args)
                e.record()
                e.synchronize()
                wall.append((time.perf_counter() - w0) * 1e3)
    gpu = sorted(s.elapsed_time(e) for s, e in evs)
    q = lambda xs, p: xs[min(len(xs) - 1, int(p * len(xs)))]  # noqa: E731
    return {"median_ms": statistics.median(gpu), "mean_ms": statistics.fmean(gpu), "min_ms": gpu[0],
            "p10_ms": q(gpu, 0.10), "p90_ms": q(gpu, 0.90), "max_ms": gpu[-1],
            "wall_median_ms": statistics.median(wall), "count": iters, "first_call_s": first_s,
            "warmup_iters": n, "output_shape": out_shape, "clocks": clocks.summary()}


def gpu_busy(torch, fn, args, cudagraph, iters):
    """Kernel time per call from the profiler (CUPTI): busy = sum of kernel and memcpy durations,
    span = first start to last end on the GPU. Calls are 2 ms apart so they separate by gaps."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    mark = torch.compiler.cudagraph_mark_step_begin if cudagraph else (lambda: None)
    torch.cuda.synchronize()

    def collect(activities):
        with profile(activities=activities) as prof:
            for _ in range(iters):
                mark()
                fn(*args)
                torch.cuda.synchronize()
                time.sleep(0.002)
        return sorted((e.time_range.start, e.time_range.end) for e in prof.events()
                      if e.device_type == DeviceType.CUDA)

    ivs = collect([ProfilerActivity.CUDA])
    activities = "cuda"
    if not ivs:  # some versions attach device events only to CPU ops
        ivs = collect([ProfilerActivity.CPU, ProfilerActivity.CUDA])
        activities = "cpu+cuda"
    if not ivs:
        raise RuntimeError("the profiler recorded no GPU activity")
    calls, cur = [], [ivs[0]]
    for iv in ivs[1:]:
        if iv[0] - max(e for _, e in cur) > 1000:  # us
            calls.append(cur)
            cur = []
        cur.append(iv)
    calls.append(cur)
    busy = [sum(e - s for s, e in c) / 1e3 for c in calls]
    span = [(max(e for _, e in c) - c[0][0]) / 1e3 for c in calls]
    return {"busy_median_ms": statistics.median(busy), "span_median_ms": statistics.median(span),
            "calls_seen": len(calls), "calls": iters, "activities": activities,
            "events_per_call": len(ivs) / max(1, len(calls))}


def bench_model(args, torch, np, name, doc, doc_path):
    log(f"== {DISPLAY[name]}")
    wdir = os.path.join(args.work, name)
    os.makedirs(wdir, exist_ok=True)
    text = is_text(name)
    seq = args.seq if text else None
    shapes = [(b, seq) for b in args.batches]
    module, names, vocab, minfo = build_model(torch, name)
    entries = {}
    for b, s in shapes:
        e = doc["entries"].setdefault(entry_key(name, b, s), {})
        e.update({"model": name, "batch": b, "seq": s, "model_info": minfo})
        entries[(b, s)] = e
    feeds = {(b, s): make_inputs(np, name, vocab, b, s) for b, s in shapes}

    def save():
        save_doc(doc, doc_path)
        if args.json:  # after every step: a call cut off by the device's limit still returns results
            save_doc(doc, args.json)

    # ---- ingot
    ingot_out = {}
    engine_path = os.path.join(wdir, "model.fp16.ingot" if args.io_precision == "model" else "model.fp16-io16.ingot")
    if not args.skip_ingot and not out_of_time(args, f"{name} ingot"):
        onnx_path = os.path.join(wdir, "model.onnx")
        meta = {"model": name, "seed": SEEDS[name], "torch": torch.__version__, "exporter": "torchscript-17",
                "info": minfo}
        err = None
        try:
            export_onnx(torch, module, names, vocab, onnx_path, os.path.join(wdir, "export_meta.json"), meta,
                        args.re_export)
        except Exception as ex:  # noqa: BLE001
            traceback.print_exc(limit=3)
            err = f"export: {one_line(ex)}"
            log(f"  export FAILED: {err}")
        binfo = {}
        if err is None:
            err, binfo = ingot_build(args, name, onnx_path, engine_path, wdir, seq if text else None)
            if err:
                err = "build " + err
        for (b, s), e in entries.items():
            if err:
                e["ingot"] = {"error": err, **binfo}
                continue
            if out_of_time(args, f"{name} {shape_tag(b, s)} ingot"):
                continue
            r = ingot_bench(args, name, engine_path, wdir, b, s)
            r.update({k: v for k, v in binfo.items() if k != "build_stdout_tail"})
            e["ingot"] = r
            if args.check_accuracy:
                try:
                    ingot_out[(b, s)] = ingot_outputs(args, engine_path, wdir, feeds[(b, s)], b, s)
                except Exception as ex:  # noqa: BLE001
                    e.setdefault("accuracy", {})["ingot_fp16"] = {"error": one_line(ex)}
                    log(f"  ingot run FAILED: {one_line(ex)}")
        if binfo.get("build_stdout_tail"):
            for e in entries.values():
                e["ingot_build_stdout_tail"] = binfo["build_stdout_tail"]
        save()

    # ---- accuracy reference: PyTorch fp32 on the GPU, TF32 off
    if args.check_accuracy and not out_of_time(args, f"{name} accuracy"):
        try:
            tf32 = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            m32 = copy.deepcopy(module).cuda().eval()
            refs = {}
            with torch.inference_mode():
                for key, f in feeds.items():
                    refs[key] = m32(*[torch.from_numpy(f[n]).cuda() for n in names]).float().cpu().numpy()
            del m32
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32
            m16 = copy.deepcopy(module).half().cuda().eval()
            with torch.inference_mode():
                for key, f in feeds.items():
                    acc = entries[key].setdefault("accuracy", {})
                    ref = refs[key]
                    acc["ref_max_abs"] = float(np.max(np.abs(ref)))
                    ins = [torch.from_numpy(f[n]).cuda() for n in names]
                    ins = [x.half() if x.is_floating_point() else x for x in ins]
                    acc["torch_fp16"] = compare(np, m16(*ins).float().cpu().numpy(), ref)
                    if key in ingot_out:
                        acc["ingot_fp16"] = compare(np, ingot_out[key], ref)
                    log(f"  accuracy b{key[0]}: ingot {json.dumps(acc.get('ingot_fp16'))}; "
                        f"torch fp16 {json.dumps(acc['torch_fp16'])}")
            del m16, refs
        except Exception as ex:  # noqa: BLE001
            traceback.print_exc(limit=3)
            for e in entries.values():
                e.setdefault("accuracy", {})["reference_error"] = one_line(ex)
            log(f"  accuracy reference FAILED: {one_line(ex)}")
        ingot_out.clear()
        gc.collect()
        torch.cuda.empty_cache()
        save()

    # ---- PyTorch fp16: FLOPs, weight bytes, peers
    try:
        m16 = copy.deepcopy(module).half().cuda().eval()
        if not text and not args.no_channels_last:
            m16 = m16.to(memory_format=torch.channels_last)
        weight_bytes = sum(p.numel() * p.element_size() for p in m16.parameters())
        gpu_in = {}
        for key, f in feeds.items():
            ins = [torch.from_numpy(f[n]).cuda() for n in names]
            ins = [x.half() if x.is_floating_point() else x for x in ins]
            if not text and not args.no_channels_last:
                ins = [x.contiguous(memory_format=torch.channels_last) for x in ins]
            gpu_in[key] = ins
        from torch.utils.flop_counter import FlopCounterMode
        with torch.inference_mode():
            for key, ins in gpu_in.items():
                fc = FlopCounterMode(display=False)
                with fc:
                    m16(*ins)
                entries[key]["flops"] = int(fc.get_total_flops())
                entries[key]["weight_bytes"] = int(weight_bytes)
                entries[key]["floor_rates"] = floor_rates_of(doc.get("device"))
                log(f"  b{key[0]}: {entries[key]['flops'] / 1e9:.1f} GFLOP, weights {weight_bytes / 2**20:.1f} MiB "
                    f"fp16, floor {fmt(floor_of(entries[key], doc.get('device')))} ms")
        save()
        if not args.skip_torch:
            for mode in args.modes:
                last_first_s = 0.0  # the mode's compile on the model's previous shape: the next one's estimate
                for key, ins in gpu_in.items():
                    e = entries[key]
                    if out_of_time(args, f"{name} {shape_tag(*key)} torch {mode}", last_first_s):
                        continue
                    log(f"  torch {mode} b{key[0]}{'' if key[1] is None else ' s%d' % key[1]} ...")
                    # Saved before the compile starts: a process killed in it (a caller's time limit
                    # inside a minutes-long max-autotune compile) leaves this in the table, not a blank.
                    e.setdefault("torch", {})[mode] = {"error": "unfinished: the process ended while this ran "
                                                                "(killed by a caller's time limit?)"}
                    save()
                    fn = None
                    try:
                        torch._dynamo.reset()
                        if mode == "eager":
                            fn = m16
                        else:
                            fn = torch.compile(m16, mode=None if mode == "default" else mode, dynamic=False)
                        with (torch.no_grad() if args.no_grad else torch.inference_mode()):
                            r = time_torch(torch, fn, ins, args.iterations, args.warmup_ms / 1e3,
                                           3 if args.quick else 10, mode in CUDAGRAPH_MODES, args.idle_ms,
                                           args.torch_prime_us, bool(args.torch_back_to_back))
                            if not args.no_kernel_time:
                                try:
                                    r.update(gpu_busy(torch, fn, ins, mode in CUDAGRAPH_MODES,
                                                      5 if args.quick else 20))
                                except Exception as ex:  # noqa: BLE001
                                    r["busy_error"] = one_line(ex)
                        r["channels_last"] = (not text) and not args.no_channels_last
                        r["peak_mem_gib"] = torch.cuda.max_memory_allocated() / 2**30
                        e.setdefault("torch", {})[mode] = r
                        last_first_s = r["first_call_s"]
                        log(f"  torch {mode} b{key[0]}: median {fmt(r['median_ms'])} ms "
                            f"(wall {fmt(r['wall_median_ms'])} ms, first call {r['first_call_s']:.1f} s; "
                            f"kernel busy {fmt(r.get('busy_median_ms'))} ms, span {fmt(r.get('span_median_ms'))} ms, "
                            f"{r.get('calls_seen', '–')}/{r.get('calls', '–')} calls "
                            f"{r.get('busy_error', '')})")
                    except Exception as ex:  # noqa: BLE001
                        traceback.print_exc(limit=4)
                        e.setdefault("torch", {})[mode] = {"error": one_line(ex)}
                        log(f"  torch {mode} b{key[0]} FAILED: {one_line(ex)}")
                    finally:
                        del fn
                        torch._dynamo.reset()
                        gc.collect()
                        torch.cuda.empty_cache()
                        torch.cuda.reset_peak_memory_stats()
                    save()
        del m16, gpu_in
    except Exception as ex:  # noqa: BLE001
        traceback.print_exc(limit=4)
        for e in entries.values():
            e["error"] = f"torch side: {one_line(ex)}"
        log(f"  torch side FAILED: {one_line(ex)}")
    del module
    gc.collect()
    torch.cuda.empty_cache()
    save()


def bench_passes(args):
    """The passes over the models: max-autotune compiles for minutes per model and shape, so with
    other modes every model first gets its ingot figures and those modes, then max-autotune model
    by model while the budget lasts: a spent budget costs max-autotune's cells, not whole models.
    The copies share args.skipped."""
    if SLOW_MODE not in args.modes or len(args.modes) == 1 or args.skip_torch:
        return [args]
    fast = copy.copy(args)
    fast.modes = [m for m in args.modes if m != SLOW_MODE]
    slow = copy.copy(args)
    slow.modes, slow.skip_ingot, slow.check_accuracy = [SLOW_MODE], True, False
    return [fast, slow]


def bench_one(args, torch, np, name, doc, doc_path):
    """bench_model for one model, its failure recorded in the entries instead of raised."""
    what = f"{name} (torch {','.join(args.modes)})" if args.skip_ingot and not args.check_accuracy else f"{name} (all)"
    if out_of_time(args, what):
        return
    try:
        bench_model(args, torch, np, name, doc, doc_path)
    except Exception as e:  # noqa: BLE001
        traceback.print_exc(limit=4)
        log(f"{name} FAILED: {one_line(e)}")
        for b in args.batches:
            s = args.seq if is_text(name) else None
            doc["entries"].setdefault(entry_key(name, b, s), {"model": name, "batch": b, "seq": s})["error"] = \
                one_line(e)
        gc.collect()
        torch.cuda.empty_cache()
    save_doc(doc, doc_path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--ingot", default=os.path.join(REPO, "build", "ingot"), help="ingot binary (default build/ingot)")
    ap.add_argument("--models", default=",".join(MODELS), help="comma list of " + ",".join(MODELS))
    ap.add_argument("--modes", default=",".join(MODES), help="PyTorch modes, comma list of " + ",".join(MODES))
    ap.add_argument("--batches", default="1,32", help="batch sizes (default 1,32; the engine profile is b1..max)")
    ap.add_argument("--seq", type=int, default=128, help="sequence length of the text models (default 128)")
    ap.add_argument("--opt-batch", type=int, default=32, help="batch of the engine's --opt-shapes (default 32)")
    ap.add_argument("--iterations", type=int, default=200, help="timed runs per shape and backend (default 200)")
    ap.add_argument("--warmup-ms", type=float, default=500, help="warm-up per shape and backend (default 500)")
    ap.add_argument("--io-precision", choices=("model", "fp16"), default="model",
                    help="ingot build --io-precision: fp16 gives the engines float16 inputs and outputs, as "
                         "PyTorch's fp16 models take and return (default model: the ONNX model's float32)")
    ap.add_argument("--idle-ms", type=float, default=0.0,
                    help="idle ms before each timed run, every side (ingot bench --idle-time; default 0: back to back)")
    ap.add_argument("--torch-prime-us", type=float, default=200.0,
                    help="spin kernel before each timed PyTorch call's start event, so that the host's launch "
                         "is not GPU time (default 200; 0: the launch counted, as before)")
    ap.add_argument("--torch-back-to-back", type=int, choices=(0, 1), default=1,
                    help="1 (default): PyTorch's timed calls back to back, an event between each two, as ingot "
                         "bench's runs are; 0: one call at a time, synchronized after each (before developer "
                         "session 40). --idle-ms > 0 times one call at a time")
    ap.add_argument("--ingot-duration", type=float, default=1.0, help="ingot bench --duration (default 1 s)")
    ap.add_argument("--ingot-timeout", type=int, default=420, help="seconds per ingot subprocess (default 420)")
    ap.add_argument("--skip-ingot", action="store_true")
    ap.add_argument("--skip-torch", action="store_true", help="no PyTorch timings (FLOPs are still counted)")
    ap.add_argument("--check-accuracy", action="store_true", help="ingot fp16 logits against PyTorch fp32")
    ap.add_argument("--no-channels-last", action="store_true", help="ResNet-50 peers in NCHW (default NHWC)")
    ap.add_argument("--no-kernel-time", action="store_true",
                    help="skip the profiler pass that measures torch's kernel-busy time per call")
    ap.add_argument("--no-grad", action="store_true", help="PyTorch under torch.no_grad() instead of inference_mode()")
    ap.add_argument("--quick", action="store_true", help="smoke test: 20 iterations, 100 ms warm-up")
    ap.add_argument("--work", default="/tmp/ingot_gpu_bench", help="work dir, local to the GPU machine")
    ap.add_argument("--inductor-cache", default="",
                    help="torch.compile's caches in this dir (TORCHINDUCTOR_CACHE_DIR; Triton's under it): "
                         "carried to another machine of the same kind, a compile of the same model and shape "
                         "loads its graph, with max-autotune's choices, instead of autotuning again")
    ap.add_argument("--re-export", action="store_true", help="export ONNX again even if the work dir has it")
    ap.add_argument("--reuse-engines", action="store_true", help="keep engines the work dir already has")
    ap.add_argument("--time-budget", type=float, default=0,
                    help="seconds: start no new step (model, shape, mode) after this much time, so the "
                         "table is printed before the device's limit (0: no limit); a step already "
                         "running (e.g. a max-autotune compile) is not interrupted")
    ap.add_argument("--fresh", action="store_true", help="ignore results accumulated in WORK/results.json")
    ap.add_argument("--json", default="", help="also write the accumulated results here")
    ap.add_argument("--merge", nargs="+", metavar="JSON", help="combine result files and print the table (no GPU)")
    args = ap.parse_args()

    if args.merge:
        doc = new_doc()
        for p in args.merge:
            try:
                merge_into(doc, load_doc(p))
            except ValueError as e:
                print(f"--merge {p}: {e}", file=sys.stderr)
                return 2
        if args.json:
            save_doc(doc, args.json)
        print(render(doc))
        return 0

    args.models = [m for m in args.models.split(",") if m]
    args.modes = [m for m in args.modes.split(",") if m]
    args.torch_back_to_back = int(args.torch_back_to_back == 1 and args.idle_ms <= 0)  # idle: one call at a time
    bad = [m for m in args.models if m not in MODELS] + [m for m in args.modes if m not in MODES]
    if bad:
        ap.error(f"unknown model/mode {bad}: models {MODELS}, modes {MODES}")
    args.batches = sorted({int(b) for b in args.batches.split(",") if b})
    if args.quick:
        args.iterations = min(args.iterations, 20)
        args.warmup_ms = min(args.warmup_ms, 100)
        args.ingot_duration = min(args.ingot_duration, 0.2)
    args.skipped = []
    args.work = os.path.abspath(args.work)
    os.makedirs(args.work, exist_ok=True)
    out_env = os.environ.get("OUT")
    if out_env and args.work.startswith(os.path.abspath(out_env)):
        log(f"warning: the work dir {args.work} is under $OUT: ONNX files and engines would come back")

    import numpy as np
    if args.inductor_cache:
        # Before torch is imported: inductor reads these once. The FX graph and AOTAutograd caches
        # (on by default in this torch) key on the graph, the config, torch's version and the
        # device, so only a machine of the same kind hits them.
        cache = os.path.abspath(args.inductor_cache)
        os.makedirs(cache, exist_ok=True)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
        os.environ["TRITON_CACHE_DIR"] = os.path.join(cache, "triton")
        os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "1")
        os.environ.setdefault("TORCHINDUCTOR_AUTOGRAD_CACHE", "1")
    import torch
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 1
    torch.backends.cudnn.benchmark = True
    if args.torch_prime_us > 0 and not hasattr(torch.cuda, "_sleep"):
        print(f"torch {torch.__version__} has no torch.cuda._sleep: --torch-prime-us needs it (0 times the "
              "launch with the call)", file=sys.stderr)
        return 2

    doc_path = os.path.join(args.work, "results.json")
    doc = new_doc()
    if not args.fresh and os.path.exists(doc_path):
        try:
            merge_into(doc, load_doc(doc_path))
            log(f"continuing {doc_path} ({len(doc['entries'])} entries)")
        except Exception as e:  # noqa: BLE001
            log(f"ignoring unreadable {doc_path}: {e}")
            doc = new_doc()

    ingot_version = None
    if not args.skip_ingot:
        try:
            p = subprocess.run([args.ingot, "--version"], capture_output=True, text=True, timeout=60)
            ingot_version = (p.stdout or p.stderr).strip().splitlines()[0] if p.returncode == 0 else None
        except Exception as e:  # noqa: BLE001
            log(f"warning: {args.ingot} --version failed: {e}")
    run = {"started": datetime.datetime.now().isoformat(timespec="seconds"), "argv": sys.argv[1:],
           "ingot_version": ingot_version, "models": args.models, "modes": [] if args.skip_torch else args.modes,
           "skip_ingot": args.skip_ingot, "iterations": args.iterations, "warmup_ms": args.warmup_ms,
           "idle_ms": args.idle_ms, "torch_prime_us": args.torch_prime_us,
           "torch_back_to_back": args.torch_back_to_back, "ingot_io_fp16": int(args.io_precision == "fp16")}
    for key, option in TIMING_SETTINGS:
        held = run_setting(doc, key, option)
        if doc["runs"] and held != run[key]:
            print(f"{doc_path} holds runs timed with {option} {held:g}; this one has {run[key]:g}: "
                  "use another --work or --fresh", file=sys.stderr)
            return 2
    doc["runs"].append(run)

    log(f"device: {torch.cuda.get_device_name(0)}; torch {torch.__version__} CUDA {torch.version.cuda}; "
        f"ingot {'(skipped)' if args.skip_ingot else ingot_version}")
    dev = device_info(torch, args.ingot)
    try:
        dev.update(measure_floors(torch, args.quick))
        log(f"floors: fp16 matmul {dev['matmul_fp16_tflops']:.1f} TFLOP/s, copy {dev['copy_bandwidth_tbps']:.2f} TB/s")
    except Exception as e:  # noqa: BLE001
        traceback.print_exc(limit=3)
        log(f"floor measurement FAILED: {one_line(e)}")
        if doc.get("device"):
            for k in ("matmul_ms", "matmul_fp16_tflops", "copy_ms", "copy_bandwidth_tbps"):
                dev.setdefault(k, doc["device"].get(k))
    doc["device"] = dev
    save_doc(doc, doc_path)

    for pass_args in bench_passes(args):
        for name in args.models:
            bench_one(pass_args, torch, np, name, doc, doc_path)
    run["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
    run["skipped"] = args.skipped
    save_doc(doc, doc_path)
    if args.json:
        save_doc(doc, args.json)
        log(f"wrote {args.json}")
    log("done")
    print()
    print(render(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
