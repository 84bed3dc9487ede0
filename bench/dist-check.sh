#!/usr/bin/env bash
# The data-parallel checks a GPU machine can run, from the repository root with
# the release binaries of bench/build-for-device.sh in .device/bin; on one GPU
# they cover what a group of one allows:
#  1. kiln-check's collectives group (NCCL against the host path);
#  2. train_digits_ddp through NCCL (`kiln launch --gpus 1`, KILN_DIST_BACKEND=nccl)
#     against the same run in one process without the launcher: same weights;
#  3. the same through the host transport on 2 ranks sharing the GPU;
#  4. 2 ranks on one GPU through NCCL, which NCCL refuses: the error must name
#     the cause and the launcher must end both ranks;
#  5. bench/dist.sh for the GPU counts present.
# Output goes to $OUT (or ./bench-out): dist-check.txt and the files of dist.sh.
set -u
OUT=${OUT:-bench-out}
mkdir -p "$OUT"
BIN=.device/bin
bash bench/unpack-binaries.sh "$BIN"
TMP=$(mktemp -d)
export NCCL_NVLS_ENABLE=0 KILN_PROGRESS=off
compare() { # max |a - b| over the tensors of two safetensors files
  "$BIN/kiln" -e "let a = load_safetensors(\"$1\"); let b = load_safetensors(\"$2\"); let m = 0.0; for k in a.keys() { let d = (a[k] - b[k]).abs().max().item(); if d > m { m = d; } } print(\`\${a.len()} tensors, largest difference \${m}\`);"
}
{
  echo "== kiln-check --group collectives"
  "$BIN/kiln-check" --group collectives --failures
  args=(scripts/train_digits_ddp.rhai --epochs 3 --out)
  echo "== one process, cuda"
  "$BIN/kiln" --device cuda "${args[@]}" "$TMP/one.safetensors"
  echo "== kiln launch --gpus 1 through NCCL"
  KILN_DIST_BACKEND=nccl "$BIN/kiln" launch --gpus 1 --device cuda "${args[@]}" "$TMP/nccl1.safetensors"
  compare "$TMP/one.safetensors" "$TMP/nccl1.safetensors"
  echo "== kiln launch --nproc 2 on one GPU through the host"
  KILN_DIST_BACKEND=host "$BIN/kiln" launch --nproc 2 --device cuda "${args[@]}" "$TMP/host2.safetensors"
  compare "$TMP/one.safetensors" "$TMP/host2.safetensors"
  echo "== kiln launch --nproc 2 on one GPU through NCCL (NCCL refuses two ranks on one GPU)"
  KILN_DIST_BACKEND=nccl timeout 120 "$BIN/kiln" launch --nproc 2 --device cuda scripts/train_digits_ddp.rhai --epochs 1
  echo "exit code $?"
} 2>&1 | tee "$OUT/dist-check.txt"
rm -rf "$TMP"
bash bench/dist.sh
