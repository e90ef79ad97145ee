#!/usr/bin/env bash
# The test command: builds ingot (installing what it needs), runs every ctest test (unit, op,
# conformance, model fixtures, CLI errors, GPU tests where a GPU is present) and ends with
# one line: "N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh || { echo "0 passed, 1 failed, 0 skipped"; exit 1; }

log=build/ctest.log
(cd build && ctest -V -j2 --timeout 1500) >"$log" 2>&1
rc=$?

# Conformance: per-suite case counts, then every failure (skips are listed in the log).
grep -E '^[0-9]+: \[[a-z-]+\] ([0-9]+ passed|pass rate|FAILED)' "$log" | sed -E 's/^[0-9]+: //' | cut -c1-300
# Failing ctest tests with their output tail.
grep -E '\*\*\*(Failed|Exception|Timeout)|Not Run' "$log" | sed -E 's/^ *[0-9]+\/[0-9]+ //'

passed=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* +Passed +[0-9.]+ sec' "$log")
failed=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*(\*\*\*Failed|\*\*\*Exception|\*\*\*Timeout|Not Run)' "$log")
skipped=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*\*\*\*Skipped' "$log")
gpu_skipped=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: gpu\..*\*\*\*Skipped' "$log")
gpu_run=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: gpu\..* +Passed +[0-9.]+ sec' "$log")
echo "GPU tests: $gpu_run run, $gpu_skipped skipped (no CUDA GPU here; scripts/gpu-check.sh runs them on one)"
echo "full log: $log"
echo "$passed passed, $failed failed, $skipped skipped"
if [ "$failed" -gt 0 ] || [ "$rc" -ne 0 ]; then exit 1; fi
