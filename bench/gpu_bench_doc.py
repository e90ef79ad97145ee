"""bench/gpu_bench.py's results document, which needs neither a GPU nor torch: its entries (one a
model and shape: ingot's figures, each PyTorch mode's, accuracy, FLOPs), the runs that made them and
how those were timed, merging documents of several calls (--merge), and the table they print.
Runs timed differently (TIMING_SETTINGS) never share a table."""
import json
import os

MODELS = ["distilbert", "bert", "distilgpt2", "resnet50"]
DISPLAY = {"distilbert": "DistilBERT", "bert": "BERT-base", "distilgpt2": "DistilGPT2", "resnet50": "ResNet-50"}
MODES = ["eager", "default", "reduce-overhead", "max-autotune"]

# Targets (ms, ingot GPU compute median) from the issue; seq is None for ResNet-50.
TARGETS_MS = {
    ("distilbert", 1, 128): 0.20,
    ("distilbert", 32, 128): 0.70,
    ("bert", 1, 128): 0.35,
    ("bert", 32, 128): 1.3,
    ("distilgpt2", 1, 128): 0.30,
    ("resnet50", 1, None): 0.35,
    ("resnet50", 32, None): 1.3,
}

def entry_key(model, batch, seq):
    return f"{model}|b{batch}|s{seq if seq is not None else '-'}"


def new_doc():
    return {"runs": [], "device": None, "entries": {}}


# How runs were timed: (the run's key, the option). Runs that differ in one never share a table.
TIMING_SETTINGS = (("idle_ms", "--idle-ms"), ("torch_prime_us", "--torch-prime-us"),
                   ("torch_back_to_back", "--torch-back-to-back"), ("ingot_io_fp16", "--io-precision fp16"))


def run_setting(doc, key, option):
    """The runs' value of a timing setting (0 in runs from before it existed); ValueError when
    they differ: runs timed differently cannot share a table."""
    values = {float(r.get(key, 0)) for r in doc.get("runs", [])}
    if len(values) > 1:
        raise ValueError(f"runs timed with different {option} ({sorted(values)}) cannot share a table")
    return values.pop() if values else 0.0


def idle_ms_of(doc):
    """The runs' --idle-ms (0: back to back)."""
    return run_setting(doc, "idle_ms", "--idle-ms")


def prime_us_of(doc):
    """The runs' --torch-prime-us (0: none, as before it existed)."""
    return run_setting(doc, "torch_prime_us", "--torch-prime-us")


def torch_back_to_back_of(doc):
    """Whether the runs timed PyTorch's calls back to back (0: one at a time, as before it existed)."""
    return run_setting(doc, "torch_back_to_back", "--torch-back-to-back") != 0


def merge_into(doc, other):
    """Folds other into doc: later values win field by field (torch modes one by one). Refuses
    (ValueError) runs timed with another --idle-ms, --torch-prime-us or --torch-back-to-back than doc's."""
    if doc.get("runs") and other.get("runs"):
        for key, option in TIMING_SETTINGS:
            ours, theirs = run_setting(doc, key, option), run_setting(other, key, option)
            if ours != theirs:
                raise ValueError(f"cannot merge runs timed with {option} {theirs:g} into runs timed with "
                                 f"{option} {ours:g}")
    doc["runs"].extend(other.get("runs", []))
    if other.get("device"):
        doc["device"] = other["device"]
    for k, e in other.get("entries", {}).items():
        d = doc["entries"].setdefault(k, {})
        for field, v in e.items():
            if field in ("torch", "accuracy") and isinstance(v, dict):
                d.setdefault(field, {}).update(v)
            else:
                d[field] = v
    return doc


def load_doc(path):
    with open(path) as f:
        return json.load(f)


def save_doc(doc, path):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, default=str)
    os.replace(tmp, path)


def fmt(v, digits=3):
    if v is None:
        return "–"
    if isinstance(v, str):
        return v
    if v >= 100:
        return f"{v:.1f}"
    return f"{v:.{digits}f}"


FLOOR_RATES = ("matmul_fp16_tflops", "copy_bandwidth_tbps")


def floor_rates_of(device):
    """The rates a floor divides by, as a row keeps them (floor_of)."""
    return {k: device.get(k) for k in FLOOR_RATES} if device else {}


def floor_of(e, device):
    """max(FLOPs / matmul rate, weight bytes / copy bandwidth) in ms, at the rates of the GPU that
    timed the row (kept with it: merged documents hold rows of several GPUs), else the device's."""
    rates = e.get("floor_rates") or device
    if not rates or e.get("flops") is None or e.get("weight_bytes") is None:
        return None
    rate = rates.get("matmul_fp16_tflops")
    bw = rates.get("copy_bandwidth_tbps")
    if not rate or not bw:
        return None
    t_flops = e["flops"] / (rate * 1e12) * 1e3
    t_bytes = e["weight_bytes"] / (bw * 1e12) * 1e3
    return max(t_flops, t_bytes)


BUSY_PERCENT = 50  # samples of a busier GPU are the ones the medians take, when there are any


def clock_cell(c):
    return "–" if not c else f"{c['sm_mhz_median']:.0f} / {c['power_w_median']:.0f}"


def sort_key(e):
    m = e.get("model")
    return (MODELS.index(m) if m in MODELS else 99, e.get("batch") or 0, e.get("seq") or 0)


def render(doc):
    """Errors and accuracy first, then the speed table, then the machine lines (printed last)."""
    out = []
    entries = sorted(doc["entries"].values(), key=sort_key)
    device = doc.get("device") or {}
    modes = [m for m in MODES if any(m in (e.get("torch") or {}) for e in entries)]

    errors = []
    for e in entries:
        label = f"{DISPLAY.get(e['model'], e['model'])} b{e['batch']}" + (f" s{e['seq']}" if e.get("seq") else "")
        ing = e.get("ingot") or {}
        if ing.get("error"):
            errors.append(f"- {label} ingot: {ing['error']}")
        for m, r in (e.get("torch") or {}).items():
            if r.get("error"):
                errors.append(f"- {label} {m}: {r['error']}")
        for side, r in (e.get("accuracy") or {}).items():
            if isinstance(r, dict) and r.get("error"):
                errors.append(f"- {label} accuracy {side}: {r['error']}")
        if e.get("error"):
            errors.append(f"- {label}: {e['error']}")
    if errors:
        out.append("Errors:")
        out.extend(errors[:40])
        if len(errors) > 40:
            out.append(f"- ... {len(errors) - 40} more in the JSON")
        out.append("")

    acc_rows = []
    for e in entries:
        a = e.get("accuracy") or {}
        ing, t16 = a.get("ingot_fp16"), a.get("torch_fp16")
        if not (ing or t16):
            continue

        def cells(r):
            if not r or r.get("error"):
                return ["err" if r else "–"] * 3
            return [f"{r['max_abs_diff']:.3g}", f"{r['rel_max_abs_diff']:.3g}", f"{r['argmax_agree']:.4f}"]

        acc_rows.append([DISPLAY.get(e["model"], e["model"]), str(e["batch"]), str(e.get("seq") or "–"),
                         f"{a.get('ref_max_abs', float('nan')):.3g}"] + cells(ing) + cells(t16))
    if acc_rows:
        out.append("Accuracy against PyTorch fp32 (TF32 off), same inputs; rel = max abs diff / max |ref|; "
                   "argmax agreement over the last axis:")
        out.append("")
        out.append("| model | batch | seq | max abs ref | ingot fp16 max abs diff | rel | argmax agree "
                   "| torch fp16 max abs diff | rel | argmax agree |")
        out.append("| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: |")
        for r in acc_rows:
            out.append("| " + " | ".join(r) + " |")
        out.append("")

    head = ["model", "batch", "seq", "ingot GPU ms", "ingot e2e ms"] + [f"torch {m} ms" for m in modes] + \
           ["best peer", "ingot/best", "ingot/best busy", "target ms", "floor ms"]
    out.append("| " + " | ".join(head) + " |")
    out.append("| --- | --: | --: | --: | --: |" + " --: |" * len(modes) + " --- | --: | --: | --: | --: |")
    for e in entries:
        ing = e.get("ingot") or {}
        gpu = ing.get("gpu_median_ms")
        e2e = ing.get("e2e_median_ms")
        row = [DISPLAY.get(e["model"], e["model"]), str(e["batch"]), str(e.get("seq") or "–"),
               "err" if ing.get("error") and gpu is None else fmt(gpu),
               "err" if ing.get("error") and e2e is None else fmt(e2e)]
        best_name, best, best_busy = None, None, None
        for m in modes:
            r = (e.get("torch") or {}).get(m)
            if r is None:
                row.append("–")
            elif r.get("median_ms") is None:
                row.append("err")
            else:
                busy = r.get("busy_median_ms")
                row.append(fmt(r["median_ms"]) + ("" if busy is None else f" ({fmt(busy)})"))
                if best is None or r["median_ms"] < best:
                    best_name, best = m, r["median_ms"]
                if busy is not None and (best_busy is None or busy < best_busy):
                    best_busy = busy
        row.append(best_name or "–")
        row.append(f"{gpu / best:.2f}" if gpu is not None and best else "–")
        row.append(f"{gpu / best_busy:.2f}" if gpu is not None and best_busy else "–")
        tgt = TARGETS_MS.get((e["model"], e["batch"], e.get("seq")))
        if tgt is None:
            row.append("–")
        else:
            mark = "" if gpu is None else (" ✓" if gpu <= tgt else " ✗")
            row.append(f"≤ {tgt:.2f}{mark}")
        row.append(fmt(floor_of(e, device)))
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    clock_rows = []
    for e in entries:
        ing_c = (e.get("ingot") or {}).get("clocks")
        peer_c = [((e.get("torch") or {}).get(m) or {}).get("clocks") for m in modes]
        if ing_c or any(peer_c):
            clock_rows.append([DISPLAY.get(e["model"], e["model"]), str(e["batch"]), clock_cell(ing_c)] +
                              [clock_cell(c) for c in peer_c])
    if clock_rows:
        out.append("SM clock (median MHz) / board power (median W) while each was timed (nvidia-smi every 100 ms; the "
                   f"samples with the GPU at least {BUSY_PERCENT} % busy where there are any; power is nvidia-smi's "
                   "average over about a second):")
        out.append("")
        out.append("| model | batch | ingot | " + " | ".join(f"torch {m}" for m in modes) + " |")
        out.append("| --- | --: | --: |" + " --: |" * len(modes))
        for r in clock_rows:
            out.append("| " + " | ".join(r) + " |")
        out.append("")
    idle, prime, series = idle_ms_of(doc), prime_us_of(doc), torch_back_to_back_of(doc)
    if run_setting(doc, "ingot_io_fp16", "--io-precision fp16"):
        out.append("ingot's engines built with --io-precision fp16: float16 inputs and outputs, as PyTorch's fp16 "
                   "models take and return (without it an engine keeps the ONNX model's float32 ones).")
    out.append((f"Timed runs {idle:g} ms apart (--idle-ms: the GPU idles before each run, every side alike). "
                if idle > 0 else "Timed runs back to back, every side alike. " if series else
                "ingot's timed runs back to back, PyTorch's one call at a time (synchronized after each, the GPU "
                "idle in between: --torch-back-to-back 0). ") +
               "ingot GPU = CUDA events recorded by the engine's graph as its first and last nodes; e2e = wall clock of one run with "
               "host<->device copies; torch = " +
               ("CUDA events between consecutive calls enqueued back to back (inputs/outputs on the GPU), " if series else
                "CUDA events around one call (inputs/outputs on the GPU), ") +
               ((f"after a spin kernel of ~{prime:g} us that keeps the GPU busy while the host launches the first call "
                 "(--torch-prime-us), " if series else
                 f"after a spin kernel of ~{prime:g} us that keeps the GPU busy while the host launches the call "
                 "(--torch-prime-us: the launch left out of the GPU time, as ingot's graph events leave it out), ")
                if prime > 0 else "the host's launch of the call included, ") +
               "median; (x) = torch's kernel-busy ms per call from the profiler (sum of kernel/memcpy durations: no "
               "launch gaps, no host overhead; a lower bound); ingot/best = ingot GPU / best torch median; "
               "ingot/best busy = ingot GPU / lowest torch busy; ✓/✗ = ingot GPU against the target.")
    if device:
        out.append(f"device: {device.get('name')} ({device.get('memory_gib', 0):.0f} GiB, "
                   f"{device.get('sm_count')} SMs, driver {device.get('driver')}); "
                   f"torch {device.get('torch')}, CUDA {device.get('cuda')}, cuDNN {device.get('cudnn')}, "
                   f"transformers {device.get('transformers')}, torchvision {device.get('torchvision')}, "
                   f"python {device.get('python')}")
        out.append(f"floors: fp16 matmul 8192^3 {fmt(device.get('matmul_fp16_tflops'), 1)} TFLOP/s "
                   f"(median {fmt(device.get('matmul_ms'))} ms), device copy 2 GiB "
                   f"{fmt(device.get('copy_bandwidth_tbps'), 2)} TB/s read+write (median "
                   f"{fmt(device.get('copy_ms'))} ms); floor = max(FLOPs/rate, fp16 weight bytes/bandwidth)")
        kept = [e["floor_rates"] for e in doc.get("entries", {}).values() if e.get("floor_rates")]
        rates = sorted({r.get("matmul_fp16_tflops") for r in kept if r.get("matmul_fp16_tflops")})
        if len(rates) > 1:
            out.append(f"  (the rows were timed on several GPUs; each row's floor is at its own GPU's rates: "
                       f"matmul {fmt(rates[0], 1)}-{fmt(rates[-1], 1)} TFLOP/s)")
    runs = doc.get("runs") or []
    if runs:
        ingot_v = sorted({r.get("ingot_version") for r in runs if r.get("ingot_version")})
        out.append(f"ingot: {', '.join(ingot_v) or '–'}; runs: {len(runs)} "
                   f"({runs[0].get('started')} .. {runs[-1].get('started')})")
        skipped = [w for r in runs for w in (r.get("skipped") or [])]
        if skipped:
            out.append(f"skipped for --time-budget (in the run(s) above): {', '.join(skipped)}")
    return "\n".join(out)
