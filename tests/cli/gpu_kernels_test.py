#!/usr/bin/env python3
"""bench/gpu_kernels.py on the CSV of a stand-in `ncu` (no GPU, no Nsight Compute): the last of
the repeating runs is found, its kernels summed by name with their bytes (--bytes) and with the
share of their cycles their SMs held no CTA and their throughputs (--activity), and the whole
run's idle-SM time. Exit 0 pass, 1 fail."""
import os
import stat
import subprocess
import sys
import tempfile

from checks import Checks  # tests/cli/checks.py, beside this file

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "..", "bench", "gpu_kernels.py")

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
          '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')


def rows():
    """Five runs of four kernels after two tuning launches: attn 20 us (SMs active 80 % of their
    cycles), norm 10 us (90 %) twice, gemm 30 us (95 %)."""
    kernels = [("void tune_kernel(int)", 5000.0, 0.5, 1.0)] * 2
    kernels += [("void attn_kernel(int)", 20000.0, 0.8, 1.0), ("void norm_kernel(int)", 10000.0, 0.9, 1.0),
                ("void gemm_kernel(int)", 30000.0, 0.95, 1.0), ("void norm_kernel(int)", 10000.0, 0.9, 1.0)] * 5
    out, i = [], 0
    for name, ns, active, elapsed in kernels:
        metrics = [("gpu__time_duration.sum", "nsecond", ns), ("dram__bytes_read.sum", "byte", 2e6),
                   ("dram__bytes_write.sum", "byte", 1e6), ("lts__t_bytes.sum", "byte", 4e6),
                   ("sm__cycles_active.avg", "cycle", active * 1000), ("sm__cycles_elapsed.avg", "cycle", elapsed * 1000),
                   ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", 60.0),
                   ("lts__throughput.avg.pct_of_peak_sustained_elapsed", "%", 40.0),
                   ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "%", 10.0)]
        for metric, unit, value in metrics:
            out.append(f'"{i}","1","ingot","127.0.0.1","{name}","1","13","(128, 1, 1)","(132, 1, 1)","0","9.0",'
                       f'"Command line profiler metrics","{metric}","{unit}","{value:,.2f}"')
        i += 1
    return out


def main():
    check = Checks("gpu_kernels")

    with tempfile.TemporaryDirectory() as tmp:
        csv_path = os.path.join(tmp, "ncu.csv")
        with open(csv_path, "w") as f:
            f.write("==PROF== Connected\n" + HEADER + "\n" + "\n".join(rows()) + "\n")
        fake = os.path.join(tmp, "ncu")
        with open(fake, "w") as f:
            f.write(f"#!/bin/sh\ncat '{csv_path}'\n")
        os.chmod(fake, os.stat(fake).st_mode | stat.S_IEXEC)
        env = dict(os.environ, PATH=tmp + os.pathsep + os.environ.get("PATH", ""))
        p = subprocess.run([sys.executable, TOOL, "engine.ingot", "--shapes", "x:1", "--ingot", "ingot", "--bytes",
                            "--activity", "--sequence"], capture_output=True, text=True, env=env)
        out = p.stdout
        check(p.returncode == 0, f"exit 0 (got {p.returncode}: {p.stderr[-500:]})")
        check("4 kernels per run, 70.0 us of kernel time" in out, "one run of four kernels found: " + out[:200])
        check("MB per run: DRAM read 8.0, DRAM write 4.0, L2 16.0" in out, "the run's bytes summed")
        # idle: attn 20 us x 20 % + norm 2 x 10 us x 10 % + gemm 30 us x 5 % = 7.5 us
        check("SMs holding no CTA: 7.5 us of the run's 70.0" in out, "the run's idle-SM time")
        norm = [l for l in out.splitlines() if "norm_kernel" in l][:1]
        check(bool(norm) and norm[0].split()[:4] == ["2", "20.0", "10.00", "28.6%"] and
              norm[0].split()[4:8] == ["4.0", "2.0", "8.0", "10.0"], f"norm's two launches summed: {norm}")
        attn = [l for l in out.splitlines() if "attn_kernel" in l and "launch order" not in l]
        check(len(attn) == 2, "attn in the summary and the launch order")
        if attn:
            cells = attn[0].split()
            # count, us total, us each, share, 3 MB columns, idle %, SM %, L2 %, DRAM %
            check(cells[:4] == ["1", "20.0", "20.00", "28.6%"], f"attn's time columns: {cells[:4]}")
            check(cells[7:11] == ["20.0", "60.0", "40.0", "10.0"], f"attn's activity columns: {cells[7:11]}")
        check("tune_kernel" not in out, "the tuning launches before the runs are left out")

    return check.exit_code()


if __name__ == "__main__":
    sys.exit(main())
