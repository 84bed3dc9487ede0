#!/usr/bin/env bash
# Runs on the GPU machine: one step of a CASE of bench/profile_step.rhai and
# bench/profile_step.py under Nsight Compute with the sections that say what
# limits a kernel (speed of light, pipes, memory, scheduler, warp stall
# reasons, occupancy; then the stall reasons and pipe use as raw metrics),
# for the kernels whose names match the regexes (kiln's and PyTorch's; by
# default the attention kernels of both). Clocks are left alone. Results
# go to $OUT (or ./bench-out): sections-<case>-{kiln,torch}.txt and
# stalls-<case>-{kiln,torch}.txt.
#
#   bash bench/profile_sections.sh CASE [KILN_REGEX [TORCH_REGEX]]
set -u
OUT=${OUT:-bench-out}
mkdir -p "$OUT"
BIN=.device/bin
bash bench/unpack-binaries.sh "$BIN"
case_=$1
kiln_kernels=${2:-flash}
torch_kernels=${3:-flash|fmha|attn|sdpa|cudnn}
SECTIONS="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis
  --section SchedulerStats --section WarpStateStats --section Occupancy --section LaunchStats"
NCU="ncu --profile-from-start off --clock-control none $SECTIONS"
# shellcheck disable=SC2086
$NCU -k "regex:$kiln_kernels" "$BIN/kiln" bench/profile_step.rhai "$case_" \
  > "$OUT/sections-$case_-kiln.txt" 2>&1 || tail -5 "$OUT/sections-$case_-kiln.txt"
# shellcheck disable=SC2086
(cd bench && $NCU -k "regex:$torch_kernels" python3 profile_step.py "$case_") \
  > "$OUT/sections-$case_-torch.txt" 2>&1 || tail -5 "$OUT/sections-$case_-torch.txt"
# why warps stall (cycles a warp spent in each state per issued instruction)
# and how busy each pipe was, as raw metrics
METRICS='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$,regex:sm__pipe_.*cycles_active\.avg\.pct_of_peak_sustained_active$'
ncu --profile-from-start off --clock-control none --metrics "$METRICS" -k "regex:$kiln_kernels" \
  "$BIN/kiln" bench/profile_step.rhai "$case_" > "$OUT/stalls-$case_-kiln.txt" 2>&1 || tail -5 "$OUT/stalls-$case_-kiln.txt"
(cd bench && ncu --profile-from-start off --clock-control none --metrics "$METRICS" -k "regex:$torch_kernels" \
  python3 profile_step.py "$case_") > "$OUT/stalls-$case_-torch.txt" 2>&1 || tail -5 "$OUT/stalls-$case_-torch.txt"
# the headline rows of each kernel, side by side in the output
grep -E "^  [a-zA-Z_0-9]+.*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|Issue Slots Busy|Eligible Warps|No Eligible|Registers Per|Achieved Occupancy|Warp Cycles Per Issued" \
  "$OUT/sections-$case_-kiln.txt" "$OUT/sections-$case_-torch.txt" | sed 's|.*/sections-||'
