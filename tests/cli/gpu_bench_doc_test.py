#!/usr/bin/env python3
"""bench/gpu_bench_doc.py, bench/gpu_bench.py's results document (no GPU, no torch): merging
keeps the later value of a field, runs timed with different --idle-ms, --torch-prime-us,
--torch-back-to-back or ingot's --io-precision never share a table (merge_into and gpu_bench.py --merge refuse them), the
table says how its runs were timed, and each row's floor is at the rates of the GPU that timed it.
Exit 0 pass, 1 fail."""
import json
import os
import subprocess
import sys
import tempfile

from checks import Checks  # tests/cli/checks.py, beside this file

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", "..", "bench")
sys.path.insert(0, BENCH)
import gpu_bench_doc as g  # noqa: E402


def doc(idle, gpu_ms, mode_ms, prime=None, series=None, io16=None):
    run = {"started": "2026-11-28T00:00:00", "ingot_version": "ingot 0.1.0"}
    if io16 is not None:
        run["ingot_io_fp16"] = io16
    if idle is not None:
        run["idle_ms"] = idle
    if prime is not None:
        run["torch_prime_us"] = prime
    if series is not None:
        run["torch_back_to_back"] = series
    entry = {"model": "bert", "batch": 32, "seq": 128, "ingot": {"gpu_median_ms": gpu_ms, "e2e_median_ms": gpu_ms + 0.04},
             "torch": {"reduce-overhead": {"median_ms": mode_ms}}}
    return {"runs": [run], "device": None, "entries": {g.entry_key("bert", 32, 128): entry}}


def main():
    check = Checks("gpu_bench_doc")

    # Documents from before --idle-ms existed read as back to back.
    merged = g.new_doc()
    g.merge_into(merged, doc(None, 1.41, 2.24))
    g.merge_into(merged, doc(0, 1.40, 2.20))
    check(g.idle_ms_of(merged) == 0, "old and idle-0 runs merge as back to back")
    table = g.render(merged)
    check("ingot's timed runs back to back, PyTorch's one call at a time" in table,
          "a table of runs from before --torch-back-to-back says PyTorch's calls were timed one at a time")
    check("| 1.400 |" in table, "the later ingot figure wins")
    try:
        g.merge_into(merged, doc(2.0, 1.32, 2.10))
        check(False, "merging 2 ms-apart runs into back-to-back runs raised nothing")
    except ValueError as e:
        check("--idle-ms" in str(e), "the refusal names --idle-ms")
    check(len(merged["runs"]) == 2, "a refused merge leaves the document as it was")
    spaced = g.new_doc()
    g.merge_into(spaced, doc(2.0, 1.32, 2.10))
    check("Timed runs 2 ms apart" in g.render(spaced), "a spaced table says so")

    # Documents from before --torch-prime-us existed read as unprimed (the launch counted).
    check("the host's launch of the call included" in table, "an unprimed table says the launch counts")
    primed = g.new_doc()
    g.merge_into(primed, doc(0, 1.34, 2.13, prime=200))
    g.merge_into(primed, doc(0, 1.33, 2.12, prime=200))
    check(g.prime_us_of(primed) == 200, "primed runs merge")
    check("spin kernel of ~200 us" in g.render(primed), "a primed table says so")
    try:
        g.merge_into(primed, doc(0, 1.41, 2.24))
        check(False, "merging unprimed runs into primed runs raised nothing")
    except ValueError as e:
        check("--torch-prime-us" in str(e), "the refusal names --torch-prime-us")

    # Documents from before --torch-back-to-back existed read as one call at a time.
    series = g.new_doc()
    g.merge_into(series, doc(0, 1.34, 2.30, prime=200, series=1))
    g.merge_into(series, doc(0, 1.33, 2.31, prime=200, series=1))
    check(g.torch_back_to_back_of(series), "back-to-back runs merge")
    table = g.render(series)
    check("Timed runs back to back, every side alike." in table, "a back-to-back table says every side was")
    check("CUDA events between consecutive calls" in table, "and how PyTorch's calls were timed")
    try:
        g.merge_into(series, doc(0, 1.34, 2.13, prime=200))
        check(False, "merging one-call-at-a-time runs into back-to-back runs raised nothing")
    except ValueError as e:
        check("--torch-back-to-back" in str(e), "the refusal names --torch-back-to-back")

    # Engines with float16 inputs and outputs: the table says so; they never share one with
    # engines of the model's float32 ones (runs from before the option had those).
    io16 = g.new_doc()
    g.merge_into(io16, doc(0, 1.30, 2.0, prime=200, series=1, io16=1))
    check("built with --io-precision fp16" in g.render(io16), "a float16-io table says so")
    check("--io-precision fp16" not in g.render(series), "a table of the model's dtypes does not")
    try:
        g.merge_into(io16, doc(0, 1.34, 2.30, prime=200, series=1))
        check(False, "merging float32-io runs into float16-io runs raised nothing")
    except ValueError as e:
        check("--io-precision fp16" in str(e), "the refusal names --io-precision fp16")

    # Rows timed on different GPUs keep their own floors: each row's floor at the rates of the GPU
    # that timed it, not at the last merged document's device.
    def floored(model, batch, rate):
        d = doc(0, 1.0, 2.0)
        e = d["entries"].pop(g.entry_key("bert", 32, 128))
        e.update(model=model, batch=batch, flops=int(1e12), weight_bytes=int(1e9),
                 floor_rates={"matmul_fp16_tflops": rate, "copy_bandwidth_tbps": 4.0})
        d["entries"][g.entry_key(model, batch, 128)] = e
        d["device"] = {"name": "H200", "matmul_fp16_tflops": rate, "copy_bandwidth_tbps": 4.0}
        return d
    two_gpus = g.new_doc()
    g.merge_into(two_gpus, floored("distilbert", 32, 500.0))
    g.merge_into(two_gpus, floored("bert", 32, 800.0))
    rows = {line.split("|")[1].strip(): line for line in g.render(two_gpus).splitlines()
            if line.startswith("| DistilBERT | 32") or line.startswith("| BERT-base | 32")}
    check(rows.get("DistilBERT", "").rstrip().endswith("| 2.000 |"), f"the first GPU's row at its 500 TFLOP/s: {rows}")
    check(rows.get("BERT-base", "").rstrip().endswith("| 1.250 |"), f"the second GPU's row at its 800 TFLOP/s: {rows}")
    check("each row's floor is at its own GPU's rates" in g.render(two_gpus), "the table says the rows' rates differ")
    old = doc(0, 1.0, 2.0)
    e = old["entries"][g.entry_key("bert", 32, 128)]
    e.update(flops=int(1e12), weight_bytes=int(1e9))
    old["device"] = {"matmul_fp16_tflops": 1000.0, "copy_bandwidth_tbps": 4.0}
    check(abs(g.floor_of(e, old["device"]) - 1.0) < 1e-9, "a row without its own rates takes the device's")

    # --merge on the command line: exit 2 and one line naming the file.
    with tempfile.TemporaryDirectory() as tmp:
        a, b = os.path.join(tmp, "a.json"), os.path.join(tmp, "b.json")
        json.dump(doc(0, 1.41, 2.24), open(a, "w"))
        json.dump(doc(2.0, 1.32, 2.10), open(b, "w"))
        p = subprocess.run([sys.executable, os.path.join(BENCH, "gpu_bench.py"), "--merge", a, b],
                           capture_output=True, text=True)
        check(p.returncode == 2, f"--merge of mixed runs exits 2 (got {p.returncode})")
        check(p.stderr.count("\n") == 1 and b in p.stderr, f"one stderr line naming {b}: {p.stderr!r}")
        p = subprocess.run([sys.executable, os.path.join(BENCH, "gpu_bench.py"), "--merge", a, a],
                           capture_output=True, text=True)
        check(p.returncode == 0 and "runs back to back" in p.stdout, "--merge of like runs prints the table")

    return check.exit_code()


if __name__ == "__main__":
    sys.exit(main())
