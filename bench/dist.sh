#!/usr/bin/env bash
# The multi-GPU benchmark, on the GPU machine from the repository root, with the
# release binaries of bench/build-for-device.sh in .device/bin: for N = 1, 2,
# 4, ... up to the GPUs present (or the counts given as arguments), kiln's
# bench/dist_bench.rhai under `kiln launch --gpus N` and PyTorch's
# bench/torch_dist_bench.py N, side by side. Results go to $OUT (or
# ./bench-out): dist-kiln.txt, dist-torch.txt, dist.md, dist.csv.
set -u
OUT=${OUT:-bench-out}
mkdir -p "$OUT"
BIN=.device/bin
bash bench/unpack-binaries.sh "$BIN"
export NCCL_NVLS_ENABLE=0
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
counts=("$@")
if [ ${#counts[@]} -eq 0 ]; then
  n=1
  while [ "$n" -le "$gpus" ]; do counts+=("$n"); n=$((n * 2)); done
fi
: > "$OUT/dist-kiln.txt"
: > "$OUT/dist-torch.txt"
for n in "${counts[@]}"; do
  echo "== $n GPU(s)"
  KILN_DIST_BACKEND=nccl "$BIN/kiln" launch --gpus "$n" --device cuda --no-prefix bench/dist_bench.rhai >> "$OUT/dist-kiln.txt" 2>&1 \
    || { echo "kiln launch --gpus $n failed:"; tail -5 "$OUT/dist-kiln.txt"; }
  PYTHONUNBUFFERED=1 python3 bench/torch_dist_bench.py "$n" >> "$OUT/dist-torch.txt" 2>&1 \
    || { echo "torch_dist_bench.py $n failed:"; tail -5 "$OUT/dist-torch.txt"; }
done
python3 bench/compare.py "$OUT/dist-kiln.txt" "$OUT/dist-torch.txt" "$OUT/dist.csv" | tee "$OUT/dist.md"
