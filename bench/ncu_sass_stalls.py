#!/usr/bin/env python3
"""Where a kernel's warps wait, instruction by instruction, from Nsight Compute's source page
(`ncu -i REPORT.ncu-rep --page source --print-source sass --csv`; the report needs the
SourceCounters section). Prints the instructions that drew the most warp-state samples, each
with its dominant stall reasons and how often it ran, then the samples by reason over the whole
kernel. Developer session 33 found ws_gemm_bench's copy bottleneck this way (ERRBAR after every
stage's cluster-scope release).

    python3 bench/ncu_sass_stalls.py source.csv [--kernel REGEX] [--top 25]
"""
import argparse
import csv
import re
import sys
from collections import Counter

SAMPLES = "Warp Stall Sampling (All Samples)"


def kernels(path):
    """[(kernel name, header, rows)] of the CSV: each kernel's block starts with a "Kernel Name" line."""
    out = []
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    i = 0
    while i < len(rows):
        if rows[i] and rows[i][0] == "Kernel Name" and i + 1 < len(rows):
            name, header, body = rows[i][1], rows[i + 1], []
            i += 2
            while i < len(rows) and not (rows[i] and rows[i][0] == "Kernel Name"):
                if len(rows[i]) >= len(header):
                    body.append(rows[i])
                i += 1
            out.append((name, header, body))
        else:
            i += 1
    return out


def number(text):
    try:
        return int(text.replace(",", ""))
    except ValueError:
        return 0


def table(header, body, top):
    """The report's lines: the top instructions by samples with their reasons, and the totals."""
    if SAMPLES not in header or "Source" not in header:
        raise ValueError(f"no '{SAMPLES}' column: was the report taken with --section SourceCounters?")
    src, samples = header.index("Source"), header.index(SAMPLES)
    executed = header.index("Instructions Executed") if "Instructions Executed" in header else None
    reasons = [(i, h[len("stall_"):]) for i, h in enumerate(header) if h.startswith("stall_") and "Not Issued" not in h]
    total = sum(number(r[samples]) for r in body)
    lines = [f"{total} samples over {len(body)} instructions"]
    by_reason = Counter()
    for r in body:
        for i, name in reasons:
            by_reason[name] += number(r[i])
    ranked = sorted(body, key=lambda r: -number(r[samples]))[:top]
    for r in ranked:
        n = number(r[samples])
        if n == 0:
            break
        own = Counter({name: number(r[i]) for i, name in reasons if number(r[i])})
        # Samples the CSV names no reason for (a wgmma waiting for the tensor pipe, on Hopper).
        if n > sum(own.values()):
            own["unlisted"] = n - sum(own.values())
        why = ", ".join(f"{k} {v}" for k, v in own.most_common(3))
        ran = f" ran {number(r[executed])}" if executed is not None else ""
        lines.append(f"{n:7d} {100.0 * n / max(total, 1):5.1f}%{ran:>14}  {r[src].strip()[:64]:64}  {why}")
    if total > sum(by_reason.values()):
        by_reason["unlisted"] = total - sum(by_reason.values())
    lines.append("by reason: " + ", ".join(f"{k} {v}" for k, v in by_reason.most_common() if v))
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--kernel", default="", help="a regular expression the kernel's name must match (default: the first)")
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args(argv)
    found = [k for k in kernels(a.csv) if re.search(a.kernel, k[0])]
    if not found:
        sys.exit(f"ncu_sass_stalls.py: error: no kernel in {a.csv} matches '{a.kernel}'")
    name, header, body = found[0]
    print(name[:160])
    try:
        print("\n".join(table(header, body, a.top)))
    except ValueError as e:
        sys.exit(f"ncu_sass_stalls.py: error: {a.csv}: {e}")


if __name__ == "__main__":
    main()
