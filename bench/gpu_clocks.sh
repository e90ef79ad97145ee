#!/usr/bin/env bash
# The SM clock, power and nvidia-smi's clock-event reasons while a bench engine runs for several
# seconds (`ingot bench --duration`), sampled every 50 ms: whether it runs at full clock or is
# held down by the power cap (sw_power_cap), a hardware slowdown or power brake, or temperature.
# nvidia-smi's power.draw averages about a second, so a loop that idles between runs can read
# well under the cap while its kernels run at it; the reasons say what the clock controller did.
# With NAME=VALUE, a second engine built with those variables set (as gpu_ab.sh --at-build) is
# measured the same way, alternating with the first, ROUNDS times.
#
#   scripts/gpu-check.sh --pack                  # here, first: .gpu/pack.tar.xz
#   bench/gpu_clocks.sh [NAME=VALUE...] [--models bert] [--batches 32] [--seconds 8] [--rounds 2]
#                                                # on the GPU machine, .gpu carried
set -uo pipefail
cd "$(dirname "$0")/.."
switches=()
while [ $# -gt 0 ] && [[ "$1" == *=* ]]; do switches+=("$1"); shift; done
source bench/gpu_engines.sh
models=bert batches=32 seconds=8 rounds=2
while [ $# -gt 0 ]; do
  if [ "$1" = --seconds ]; then seconds=$2; shift 2; continue; fi
  gpu_option "$1" "${2:-}" || { echo "ingot: error: gpu_clocks.sh: unknown argument '$1'" >&2; exit 2; }
  shift 2
done
gpu_engines

reasons=sw_power_cap,hw_slowdown,hw_power_brake_slowdown,sw_thermal_slowdown,hw_thermal_slowdown
fields=clocks.sm,power.draw,utilization.gpu$(printf ',clocks_event_reasons.%s' ${reasons//,/ })
# Drivers before 535 name the reasons clocks_throttle_reasons.
nvidia-smi --query-gpu="$fields" --format=csv,noheader >/dev/null 2>&1 ||
  fields=${fields//clocks_event_reasons/clocks_throttle_reasons}
nvidia-smi --query-gpu=name,power.limit,enforced.power.limit,clocks.max.sm,temperature.gpu --format=csv

# clock_profile ENGINE SHAPES: one line: the busy samples' median and lowest clock, median and
# highest power, and the share of them with each reason active.
clock_profile() {
  nvidia-smi --query-gpu="$fields" --format=csv,noheader,nounits -lms 50 >/tmp/gpu_clocks.csv &
  local smi=$!
  "$ing" bench "$1" --shapes "$2" --iterations 1 --duration "$seconds" --warmup-ms 500 >/dev/null 2>&1 ||
    echo "bench failed: $1"
  kill "$smi"
  wait "$smi" 2>/dev/null
  python3 - /tmp/gpu_clocks.csv "$reasons" <<'PY'
import statistics, sys
names = sys.argv[2].split(",")
rows = []
for line in open(sys.argv[1]):
    v = [x.strip() for x in line.split(",")]
    try:
        clock, power, busy = float(v[0]), float(v[1]), float(v[2])
    except (ValueError, IndexError):
        continue
    if busy >= 50:
        rows.append((clock, power, [x.lower().startswith("active") for x in v[3:]]))
if not rows:
    print("no sample with the GPU >= 50 % busy")
    sys.exit()
share = lambda i: 100.0 * sum(r[2][i] for r in rows if i < len(r[2])) / len(rows)
print("%d busy samples: %.0f MHz median (lowest %.0f), %.0f W median (highest %.0f); active: %s" % (
    len(rows), statistics.median(r[0] for r in rows), min(r[0] for r in rows),
    statistics.median(r[1] for r in rows), max(r[1] for r in rows),
    ", ".join("%s %.0f%%" % (n, share(i)) for i, n in enumerate(names))))
PY
}

for m in ${models//,/ }; do
  engine="$work/$m/model.fp16.ingot"
  [ -f "$engine" ] || { echo "$m: no engine"; continue; }
  engine_b=""
  if [ ${#switches[@]} -gt 0 ]; then
    engine_b="$engine.B"
    build_engine_with "$m" "$engine_b" "${switches[@]}" || { echo "$m: B build failed"; engine_b=""; }
  fi
  for b in ${batches//,/ }; do
    shapes=$(bench_shapes "$m" "$b")
    for r in $(seq "$rounds"); do
      echo "$m b$b round $r, engine as built: $(clock_profile "$engine" "$shapes")"
      [ -n "$engine_b" ] && echo "$m b$b round $r, built with ${switches[*]}: $(clock_profile "$engine_b" "$shapes")"
    done
  done
done
