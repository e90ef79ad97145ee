#!/usr/bin/env bash
# A/B of two builds of libingot.so on the GPU machine: the same fp16 bench engines timed by the
# packed CLI with the packed library (A) and with another commit's library (B), alternating,
# ROUNDS times per shape. For kernel changes that a run-time switch cannot select (a changed launch
# struct, a kernel rewritten), where bench/gpu_ab.sh's one binary cannot hold both.
#
#   bench/gpu_ab_lib.sh --pack REF [FILE]   # here, after scripts/gpu-check.sh --pack: builds REF
#                                           # (a branch or commit) in the same build dir, packs its
#                                           # libingot.so as FILE (.gpu/lib_b.tar.xz; ~10 MB), and
#                                           # builds the checked-out tree again
#   bench/gpu_ab_lib.sh [NAME=VALUE...] [--lib FILE] [--models distilbert,bert] [--batches 1,32]
#                       [--rounds 4] [--iterations 300]
#                                           # on the GPU machine, .gpu carried; the variables are
#                                           # set for B's runs alone (a switch of B's library)
#
# The engines are built by A (the pack); B must read A's engine files (same format version). B's
# library is loaded by A's CLI, so only changes inside the library compare this way.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = --pack ]; then
  ref=${2:?"ingot: error: gpu_ab_lib.sh --pack needs a branch or commit"}
  lib=${3:-.gpu/lib_b.tar.xz}
  [ -z "$(git status --porcelain --untracked-files=no)" ] ||
    { echo "ingot: error: gpu_ab_lib.sh --pack: commit or stash the tracked changes first" >&2; exit 1; }
  here=$(git rev-parse --abbrev-ref HEAD)
  [ "$here" = HEAD ] && here=$(git rev-parse HEAD)
  git checkout -q "$ref" || exit 1
  status=0
  cmake --build build -j"$(nproc)" --target ingot >/dev/null &&
    tar -C build -cJf "$lib" libingot.so || status=1
  git checkout -q "$here"
  cmake --build build -j"$(nproc)" --target ingot >/dev/null || status=1
  [ "$status" = 0 ] && echo "packed $lib ($(git rev-parse --short "$ref"), $(du -h "$lib" | cut -f1))"
  exit "$status"
fi

source bench/gpu_engines.sh
rounds=4
lib=.gpu/lib_b.tar.xz
b_env=()
while [ $# -gt 0 ] && [[ "$1" == *=* ]]; do b_env+=("$1"); shift; done
while [ $# -gt 0 ]; do
  if [ "$1" = --lib ]; then lib=$2; shift 2; continue; fi
  gpu_option "$1" "${2:-}" || { echo "ingot: error: gpu_ab_lib.sh: unknown argument '$1'" >&2; exit 2; }
  shift 2
done
[ -f "$lib" ] || { echo "ingot: error: $lib is missing (make it with --pack REF)" >&2; exit 1; }
gpu_engines  # ing: A's CLI wrapper (scripts/gpu-check.sh --unpack-to /tmp/ingot-pack)
a_ing=$ing
pack_a=$(dirname "$a_ing")/pack b_dir=/tmp/ingot-pack-b
rm -rf "$b_dir" && mkdir -p "$b_dir" && cp -r "$pack_a" "$b_dir/" && tar -C "$b_dir/pack" -xJf "$lib"
sed "s#$pack_a#$b_dir/pack#g" "$a_ing" >"$b_dir/ingot" && chmod +x "$b_dir/ingot"
b_ing=$b_dir/ingot

echo "A/B of libingot.so (GPU compute median ms of $iterations runs; A the pack's, B $lib${b_env[*]:+ with ${b_env[*]}})"
for m in ${models//,/ }; do
  engine="$work/$m/model.fp16.ingot"
  [ -f "$engine" ] || { echo "$m: no engine"; continue; }
  for b in ${batches//,/ }; do
    shapes=$(bench_shapes "$m" "$b")
    line="$m b$b:"
    for r in $(seq "$rounds"); do
      ing=$a_ing; a=$(gpu_median "$engine" "$shapes")
      ing=$b_ing; bb=$(gpu_median "$engine" "$shapes" "${b_env[@]}")
      line="$line  $a / $bb"
    done
    echo "$line"
  done
done
ing=$a_ing
