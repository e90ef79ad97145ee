#!/usr/bin/env python3
"""Per-kernel GPU times of one ingot engine run, through Nsight Compute (ncu): where the time of a
model goes below the op level (cuBLASLt's tile shapes, cuDNN's algorithms, each of ingot's own
kernels), which INGOT_CUDA_PROFILE=1 (op level) cannot show.

Runs on the GPU machine:
  python3 bench/gpu_kernels.py --ingot DIR/ingot ENGINE --shapes input_ids:1x128,attention_mask:1x128

It runs `ingot bench ENGINE --no-cuda-graph` for a few iterations under
`ncu --metrics gpu__time_duration.sum --cache-control none --clock-control none` (kernels run one
at a time, caches as the program left them, clocks untouched), finds the last complete run in the
launch sequence (the sequence repeats once per run; plan-time autotuning launches come before),
and prints that run's kernels in launch order and summed by kernel name. Kernel times exclude
launch gaps, so their sum is below the CUDA-graph time that bench reports.

--bytes adds each kernel's DRAM reads and writes and its L2 traffic (dram__bytes_read.sum,
dram__bytes_write.sum, lts__t_bytes.sum), in MB: at batch 32 a BERT-size run is held at the
board's power limit, so bytes moved through DRAM cost clock as much as time.

--activity adds, per kernel, the share of its elapsed cycles its SMs held no CTA (1 -
sm__cycles_active.avg / sm__cycles_elapsed.avg: its launch ramp and its tail) and its SM, L2 and
DRAM throughput as % of peak (sm__, lts__ and dram__throughput.avg.pct_of_peak_sustained_elapsed).
Developer session 40 found each of a BERT-base b32 layer's four kernels idle 12-21 % that way and
none near a throughput limit.
"""
import argparse
import collections
import csv
import io
import os
import shutil
import subprocess
import sys


def find_ncu():
    found = shutil.which("ncu")
    if found:
        return found
    for root in ("/usr/local/cuda/bin", "/opt/nvidia/nsight-compute"):
        for dirpath, _, files in os.walk(root):
            if "ncu" in files:
                return os.path.join(dirpath, "ncu")
    return None


# --activity's metrics: the first two give the idle-SM share, the rest are printed as they are.
ACTIVITY_METRICS = ["sm__cycles_active.avg", "sm__cycles_elapsed.avg",
                    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
                    "dram__throughput.avg.pct_of_peak_sustained_elapsed"]


def activity(values, metrics):
    """[idle SM %, SM %, L2 %, DRAM %] of one kernel from its --activity metrics ([] without them)."""
    if not metrics:
        return []
    active, elapsed = values.get(metrics[0], 0.0), values.get(metrics[1], 0.0)
    idle = 100.0 * (1.0 - active / elapsed) if elapsed > 0 else 0.0
    return [idle] + [values.get(m, 0.0) for m in metrics[2:]]


def metric_cells(moved, percents):
    """The MB columns, then the activity columns (idle SM %, SM %, L2 %, DRAM %)."""
    widths = (10, 5, 5, 7)  # under "  idle SM %  SM %  L2 %  DRAM %"
    return "".join(f" {v:11.1f}" for v in moved) + "".join(
        f" {v:{w}.1f}" for v, w in zip(percents, widths))


def short_name(name, width):
    # Template arguments make cuBLASLt/cuDNN names hundreds of characters long; the head and
    # the first template arguments are what tell kernels apart.
    name = name.replace("void ", "", 1)
    return name if len(name) <= width else name[: width - 1] + "…"


def last_run(names):
    """The launches of one run: the smallest p > 3 whose last 3p launches repeat with period p
    (a run that ends in a few identical kernels must not pass for a run of its own)."""
    n = len(names)
    for p in range(4, n // 3 + 1):
        if names[n - p:] == names[n - 2 * p:n - p] == names[n - 3 * p:n - 2 * p]:
            return p
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("engine")
    ap.add_argument("--shapes", required=True)
    ap.add_argument("--ingot", required=True, help="the ingot binary or wrapper")
    ap.add_argument("--iterations", type=int, default=5,
                    help="timed runs; the first run's plan-time autotuning breaks the pattern, and the last "
                         "three runs must repeat for one run to be found (default 5)")
    ap.add_argument("--width", type=int, default=110, help="kernel name column width")
    ap.add_argument("--top", type=int, default=25, help="rows of the by-name summary")
    ap.add_argument("--sequence", action="store_true", help="also print the run's kernels in launch order")
    ap.add_argument("--bytes", action="store_true", help="also DRAM read/write and L2 bytes per kernel (MB)")
    ap.add_argument("--activity", action="store_true",
                    help="also each kernel's idle-SM share of its cycles and SM / L2 / DRAM throughput (%% of peak)")
    args = ap.parse_args()
    byte_metrics = ["dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum"] if args.bytes else []
    activity_metrics = ACTIVITY_METRICS if args.activity else []

    ncu = find_ncu()
    if not ncu:
        sys.exit("gpu_kernels.py: error: ncu (Nsight Compute) is not installed here")
    cmd = [ncu, "--metrics", ",".join(["gpu__time_duration.sum"] + byte_metrics + activity_metrics),
           "--cache-control", "none", "--clock-control", "none",
           "--csv", "--print-units", "base", "--target-processes", "all",
           args.ingot, "bench", args.engine, "--shapes", args.shapes, "--no-cuda-graph",
           "--iterations", str(args.iterations), "--duration", "0", "--warmup-ms", "0"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    text = p.stdout
    start = text.find('"ID"')
    if p.returncode != 0 or start < 0:
        sys.stderr.write(p.stdout[-3000:] + p.stderr[-3000:])
        sys.exit(f"gpu_kernels.py: error: ncu exited {p.returncode} without a kernel table")
    all_rows = list(csv.DictReader(io.StringIO(text[start:])))
    rows = [r for r in all_rows if r.get("Metric Name") == "gpu__time_duration.sum"]
    mb = collections.defaultdict(dict)  # kernel ID -> metric -> MB
    raw = collections.defaultdict(dict)  # kernel ID -> activity metric -> value
    for r in all_rows:
        if r.get("Metric Name") in byte_metrics:
            mb[r["ID"]][r["Metric Name"]] = float(r["Metric Value"].replace(",", "")) / 1e6  # base unit: bytes
        elif r.get("Metric Name") in activity_metrics:
            raw[r["ID"]][r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
    kernels = []
    for r in rows:
        v = float(r["Metric Value"].replace(",", ""))
        unit = r.get("Metric Unit", "nsecond")
        us = v / 1000.0 if unit in ("nsecond", "ns") else v * 1000.0 if unit in ("msecond", "ms") else v
        kernels.append((r["Kernel Name"], us, r.get("Grid Size", ""), r.get("Block Size", ""),
                        [mb[r["ID"]].get(m, 0.0) for m in byte_metrics] + activity(raw[r["ID"]], activity_metrics)))
    names = [k[0] for k in kernels]
    period = last_run(names)
    run = kernels[-period:]
    total = sum(k[1] for k in run)
    print(f"== {os.path.basename(os.path.dirname(os.path.abspath(args.engine)))} {args.shapes}: "
          f"{period} kernels per run, {total:.1f} us of kernel time (no launch gaps)")
    nb = len(byte_metrics)
    if byte_metrics:
        sums = [sum(k[4][i] for k in run) for i in range(nb)]
        print("  MB per run: DRAM read %.1f, DRAM write %.1f, L2 %.1f" % tuple(sums))
    if activity_metrics:
        idle_us = sum(k[1] * k[4][nb] / 100 for k in run)
        print(f"  SMs holding no CTA: {idle_us:.1f} us of the run's {total:.1f} (launch ramps and tails, "
              "weighted by each kernel's time)")
    by = collections.OrderedDict()
    for name, us, grid, _, cols in run:
        e = by.setdefault(name, [0, 0.0, grid, [0.0] * len(cols)])
        e[0] += 1
        e[1] += us
        # MB add up over launches; the activity percentages are weighted by each launch's time
        e[3] = [a + (b if i < nb else b * us) for i, (a, b) in enumerate(zip(e[3], cols))]
    head = ("  DRAM rd MB  DRAM wr MB     L2 MB" if byte_metrics else "") + (
        "  idle SM %  SM %  L2 %  DRAM %" if activity_metrics else "")
    print(f"  {'count':>5} {'us total':>9} {'us each':>8} {'share':>6}{head}  kernel")
    for name, (count, us, grid, cols) in sorted(by.items(), key=lambda kv: -kv[1][1])[: args.top]:
        print(f"  {count:5d} {us:9.1f} {us / count:8.2f} {100 * us / total:5.1f}%"
              f"{metric_cells(cols[:nb], [c / us if us else 0.0 for c in cols[nb:]])}  {short_name(name, args.width)} [{grid}]")
    if args.sequence:
        print("  launch order:")
        for i, (name, us, grid, block, cols) in enumerate(run):
            print(f"  {i:4d} {us:9.2f} us{metric_cells(cols[:nb], cols[nb:])}  grid {grid:>14} block {block:>12}  "
                  f"{short_name(name, args.width)}")


if __name__ == "__main__":
    main()
