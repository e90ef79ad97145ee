#!/usr/bin/env python3
"""Per-kernel table of one graph replay from an Nsight Systems cuda_gpu_trace CSV
(bench/gpu_graph_trace.sh writes them): each `ingot bench` run copies its inputs to the device,
replays the graph and copies the outputs back, so the kernels between two input copies are one
replay. The table is the median over the last 20 replays of the most common length: each node's
duration, the gap from the end of the node before it (negative where dependent launch overlaps
them) and its launch shape; then the replay's span and the sums.

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
    span = med(x[-1][0] + x[-1][1] - x[0][0] for x in full) / 1e3
    print("replays %d (%d used), %d kernels each; span %.1f us = kernels %.1f + gaps %.1f" %
          (len(runs), len(full), n, span, sum(r[1] for r in rows), sum(r[2] for r in rows)))


if __name__ == "__main__":
    main()
