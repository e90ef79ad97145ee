#!/usr/bin/env python3
"""Per-kernel table of one graph replay from an Nsight Systems cuda_gpu_trace CSV
(bench/gpu_graph_trace.sh writes them): each `ingot bench` run copies its inputs to the device,
replays the graph and copies the outputs back, so the kernels between two input copies are one
replay. The table is the median over the last 20 replays of the most common length: each node's
duration, the gap from the end of the node before it (negative where dependent launch overlaps
them) and its launch shape; then the replay's span and the sums, and the time a replay has no
kernel running at all, with its longest stretch (a node that starts late, as session 39's root
clear did, shows there and not in the gaps, which are to the node listed before).

    python3 bench/graph_trace.py trace_distilbert_32.csv.gz [--totals]   # --totals: sums by kernel name only
"""
import argparse
import csv
import gzip
import re
import statistics
from collections import Counter


def replays(path):
    opener = gzip.open if path.endswith(".gz") else open
    runs, cur = [], []
    with opener(path, "rt") as f:
        for r in csv.DictReader(f):
            name = r["Name"]
            if name.startswith("[CUDA memcpy Host-to-Device]"):
                if cur:
                    runs.append(cur)
                cur = []
            elif not name.startswith("[CUDA memcpy"):
                cur.append((int(r["Start (ns)"]), int(r["Duration (ns)"]), name, r["GrdX"], r["GrdY"], r["BlkX"]))
    if cur:
        runs.append(cur)
    return runs


def short(name):
    name = re.sub(r"\(.*", "", name)
    return re.sub(r"void |ingot::cuda::|<unnamed>::", "", name)[:70]


def idle_stretches(replay):
    """(ns, index of the kernel that ends it) for each stretch of a replay with no kernel running."""
    order = sorted(range(len(replay)), key=lambda i: replay[i][0])
    out, end = [], None
    for i in order:
        start, dur = replay[i][0], replay[i][1]
        if end is not None and start > end:
            out.append((start - end, i))
        end = start + dur if end is None else max(end, start + dur)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--totals", action="store_true")
    a = ap.parse_args()
    runs = replays(a.trace)
    if not runs:
        raise SystemExit("graph_trace.py: error: no kernels in " + a.trace)
    n = Counter(len(x) for x in runs).most_common(1)[0][0]
    full = [x for x in runs if len(x) == n][-20:]
    med = statistics.median
    rows, sums = [], Counter()
    for i in range(n):
        dur = med(x[i][1] for x in full) / 1e3
        gap = med(x[i][0] - (x[i - 1][0] + x[i - 1][1]) for x in full) / 1e3 if i else 0.0
        k = full[-1][i]
        rows.append((i, dur, gap, k))
        sums[short(k[2])] += dur
    if not a.totals:
        print("  #     us    gap  grid / block  kernel")
        for i, dur, gap, k in rows:
            print("%3d %6.2f %6.2f  %s,%s / %s  %s" % (i, dur, gap, k[3] or "-", k[4] or "-", k[5] or "-", short(k[2])))
    else:
        for name, us in sums.most_common():
            print("%8.1f us  %s" % (us, name))
    spans = [max(k[0] + k[1] for k in x) - x[0][0] for x in full]
    span = med(spans) / 1e3
    print("replays %d (%d used), %d kernels each; span %.1f us = kernels %.1f + gaps %.1f" %
          (len(runs), len(full), n, span, sum(r[1] for r in rows), sum(r[2] for r in rows)))
    # Time with no kernel running at all (the gaps above are to the node listed before, which on
    # a graph's side branch may run beside the chain): a kernel waiting for a late node shows here.
    idle = [idle_stretches(x) for x in full]
    longest = max(idle[-1], default=(0.0, 0))
    print("no kernel running: %.1f us a replay (median; spans %.1f-%.1f us); longest stretch %.1f us, before #%d" %
          (med(sum(g for g, _ in i) for i in idle) / 1e3,
           min(spans) / 1e3, max(spans) / 1e3, longest[0] / 1e3, longest[1]))


if __name__ == "__main__":
    main()
