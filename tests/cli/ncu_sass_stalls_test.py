#!/usr/bin/env python3
"""bench/ncu_sass_stalls.py on a small Nsight Compute source-page CSV of two kernels (no GPU, no
ncu): instructions ranked by samples with their reasons, samples no reason names counted as
unlisted, the kernel chosen by name, and a report without the sampling columns refused.
Exit 0 pass, 1 fail."""
import os
import subprocess
import sys
import tempfile

from checks import Checks  # tests/cli/checks.py, beside this file

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "..", "bench", "ncu_sass_stalls.py")
sys.path.insert(0, os.path.dirname(TOOL))
import ncu_sass_stalls as n  # noqa: E402

HEADER = ('"Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued Samples)",'
          '"Instructions Executed","stall_barrier","stall_long_sb","stall_membar","stall_barrier (Not Issued)"')
CSV = "\n".join([
    '"Kernel Name","void first_kernel(int)",',
    HEADER,
    '"0x10","      HGMMA.64x192x16.F32 R24, gdesc[UR16], R24","50","40","4,096","0","0","0","0"',
    '"0x20","      ERRBAR","30","30","1024","0","0","29","0"',
    '"0x30","      LDG.E R2, desc[UR12][R6.64]","20","20","512","0","18","0","0"',
    '"0x40","      BAR.SYNC.DEFER_BLOCKING 0x0","0","0","8","0","0","0","0"',
    '"Kernel Name","void nvjet_sm90_tile(int)",',
    HEADER,
    '"0x10","      HGMMA.64x128x16.F32 R24, gdesc[UR16], R24","7","7","64","0","0","0","0"',
])


def main():
    check = Checks("ncu_sass_stalls")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "source.csv")
        with open(path, "w") as f:
            f.write(CSV + "\n")
        ks = n.kernels(path)
        check([k[0] for k in ks] == ["void first_kernel(int)", "void nvjet_sm90_tile(int)"], f"two kernels: {[k[0] for k in ks]}")
        lines = n.table(ks[0][1], ks[0][2], 10)
        check(lines[0] == "100 samples over 4 instructions", f"header line: {lines[0]}")
        check("HGMMA" in lines[1] and "unlisted 50" in lines[1] and "ran 4096" in lines[1], f"first: {lines[1]}")
        check("ERRBAR" in lines[2] and "membar 29" in lines[2] and "unlisted 1" in lines[2], f"second: {lines[2]}")
        check("LDG" in lines[3] and "long_sb 18" in lines[3], f"third: {lines[3]}")
        check(not any("BAR.SYNC" in l for l in lines), "instructions without samples are left out")
        check(lines[-1] == "by reason: unlisted 53, membar 29, long_sb 18", f"totals: {lines[-1]}")

        out = subprocess.run([sys.executable, TOOL, path, "--kernel", "nvjet"], capture_output=True, text=True)
        check(out.returncode == 0 and "nvjet_sm90_tile" in out.stdout and "7 samples over 1 instructions" in out.stdout,
              f"--kernel picks the second: {out.stdout!r} {out.stderr!r}")
        out = subprocess.run([sys.executable, TOOL, path, "--kernel", "absent"], capture_output=True, text=True)
        check(out.returncode != 0 and "no kernel" in out.stderr and "absent" in out.stderr, f"no match: {out.stderr!r}")

        bare = os.path.join(tmp, "bare.csv")
        with open(bare, "w") as f:
            f.write('"Kernel Name","void k()",\n"Address","Source","Instructions Executed"\n"0x10","  NOP","1"\n')
        out = subprocess.run([sys.executable, TOOL, bare], capture_output=True, text=True)
        check(out.returncode != 0 and "SourceCounters" in out.stderr, f"no sampling columns: {out.stderr!r}")

    return check.exit_code()


if __name__ == "__main__":
    sys.exit(main())
