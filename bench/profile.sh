#!/usr/bin/env bash
# Runs on the GPU machine: one step of each CASE of bench/profile_step.rhai
# and bench/profile_step.py under Nsight Compute (kernel durations only,
# clocks left alone) and prints both sides' step time (unprofiled) and GPU
# time summed by kernel name.
# Results go to $OUT (or ./bench-out): profile-<case>-{kiln,torch}.csv.
#
#   bash bench/profile.sh CASE...
set -u
OUT=${OUT:-bench-out}
mkdir -p "$OUT"
BIN=.device/bin
bash bench/unpack-binaries.sh "$BIN"
NCU="ncu --profile-from-start off --clock-control none --metrics gpu__time_duration.sum --csv --print-units base"
for c in "$@"; do
  # the step times first, with no profiler attached
  "$BIN/kiln" bench/profile_step.rhai "$c" 2>&1 | tail -1
  (cd bench && python3 profile_step.py "$c" 2>&1 | tail -1)
  $NCU "$BIN/kiln" bench/profile_step.rhai "$c" > "$OUT/profile-$c-kiln.csv" 2> "$OUT/profile-$c-kiln.err" || tail -5 "$OUT/profile-$c-kiln.err"
  (cd bench && $NCU python3 profile_step.py "$c") > "$OUT/profile-$c-torch.csv" 2> "$OUT/profile-$c-torch.err" || tail -5 "$OUT/profile-$c-torch.err"
  python3 bench/ncu_summary.py "$c" "$OUT/profile-$c-kiln.csv" "$OUT/profile-$c-torch.csv"
done
