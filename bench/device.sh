#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with the release binaries
# built by bench/build-for-device.sh in .device/bin: the CPU-vs-CUDA
# differential check, then kiln's and PyTorch's benchmarks side by side.
# Results go to $OUT (or ./bench-out) as one archive, results.tgz (check.txt,
# check.csv, bench.md, bench.csv, cnn.md, ...).
set -u
# Flags, in any order: --check-only (no elementwise/matmul benchmarks),
# --golden (golden scripts and verifiers on CUDA), --cnn (convolution check,
# benchmark and, with DATA set, the Fashion-MNIST CNN), --no-cold (skip the
# cold-start timings, which JIT every kernel module once), --gpt (the
# attention and GPT benchmark and scripts/train_gpt.rhai at full size),
# --attention (the fused attention's check with its kernels' registers and
# shared memory, the attention and GPT benchmark (also on .device/base/kiln,
# an earlier build kept by build-for-device.sh --keep-base, when there),
# kernel-by-kernel profiles of SDPA steps against PyTorch's: bench/profile.sh
# with the cases in $SDPA_CASES, and Nsight Compute's limiter sections:
# bench/profile_sections.sh with the cases in $SECTIONS_CASES; with
# --check-only, nothing else runs).
CHECK_ONLY=0; GOLDEN=0; CNN=0; COLD=1; GPT=0; ATTENTION=0
for a in "$@"; do
  case "$a" in
    --check-only) CHECK_ONLY=1 ;;
    --golden) GOLDEN=1 ;;
    --cnn) CNN=1 ;;
    --no-cold) COLD=0 ;;
    --gpt) GPT=1 ;;
    --attention) ATTENTION=1 ;;
    *) echo "device.sh: unknown flag $a (flags: --check-only --golden --cnn --no-cold --gpt --attention)" >&2; exit 2 ;;
  esac
done
OUT=${OUT:-bench-out}
mkdir -p "$OUT"
BIN=.device/bin
# build-for-device.sh packs the binaries (and keeps an earlier kiln in
# .device/base when asked to)
BASE=.device/base
bash bench/unpack-binaries.sh "$BIN" "$BASE"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
# First, before anything else has used the GPU: the cold start (each case on
# an empty driver compute cache of its own).
if [ "$COLD" = 1 ]; then
  echo "== cold start"
  bash bench/cold_start.sh | tee "$OUT/cold_start.txt"
fi
# kiln's and PyTorch's attention benchmark (bench/attention_bench.*), paired
attention_benchmark() {
  "$BIN/kiln" bench/attention_bench.rhai > "$OUT/attention_kiln.txt" 2>&1 || tail -3 "$OUT/attention_kiln.txt"
  PYTHONUNBUFFERED=1 python3 bench/attention_bench.py > "$OUT/attention_torch.txt" 2>&1 || tail -3 "$OUT/attention_torch.txt"
  python3 bench/compare.py "$OUT/attention_kiln.txt" "$OUT/attention_torch.txt" "$OUT/attention.csv" | tee "$OUT/attention.md"
}
if [ "$ATTENTION" = 1 ]; then
  echo "== fused attention: check and kernel resources"
  "$BIN/kiln-check" --resources --group attention --group training --group graphs > "$OUT/check_attention.txt" 2>&1
  echo "kiln-check exit code $?"
  grep -E "FAIL|passed,|asynchrony|flash90" "$OUT/check_attention.txt" | tail -30
  echo "== attention and GPT benchmark"
  attention_benchmark
  if [ -x "$BASE/kiln" ]; then
    echo "== the same benchmark on the kept earlier build (.device/base/kiln)"
    "$BASE/kiln" bench/attention_bench.rhai > "$OUT/attention_base.txt" 2>&1 || tail -3 "$OUT/attention_base.txt"
    python3 bench/compare.py "$OUT/attention_base.txt" "$OUT/attention_torch.txt" "$OUT/attention_base.csv" | tee "$OUT/attention_base.md"
  fi
  echo "== SDPA steps kernel by kernel"
  bash bench/profile.sh ${SDPA_CASES:-sdpa-8-16-2048-128-causal-bf16 sdpa-8-16-2048-64-causal-bf16 sdpa-8-16-2048-128-causal-f16}
  echo "== what limits the attention kernels (Nsight Compute sections)"
  for c in ${SECTIONS_CASES:-sdpa-8-16-2048-128-full-bf16}; do bash bench/profile_sections.sh "$c"; done
  if [ "$CHECK_ONLY" = 1 ]; then
    tar czf results.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv results.tgz "$OUT/results.tgz"
    echo "results in $OUT/results.tgz"
    exit 0
  fi
fi
echo "== differential check"
# KILN_CUDNN_DEBUG: say where cuDNN's graph API had no plan (the legacy calls run then)
KILN_CUDNN_DEBUG=1 "$BIN/kiln-check" --resources --csv "$OUT/check.csv" > "$OUT/check.txt" 2>&1
echo "kiln-check exit code $?"
grep -E "FAIL|asynchrony|passed,|registers" "$OUT/check.txt" | tail -60
echo "cuDNN graph API passed over $(grep -c "graph API" "$OUT/check.txt") times"; grep "graph API" "$OUT/check.txt" | sort | uniq -c | sort -rn | head -8
if [ "$CHECK_ONLY" = 0 ]; then
  echo "== benchmarks"
  "$BIN/kiln" bench/kiln_bench.rhai > "$OUT/kiln.txt" 2>&1 || tail -3 "$OUT/kiln.txt"
  PYTHONUNBUFFERED=1 python3 bench/torch_bench.py > "$OUT/torch.txt" 2>&1 || tail -3 "$OUT/torch.txt"
  python3 bench/compare.py "$OUT/kiln.txt" "$OUT/torch.txt" "$OUT/bench.csv" | tee "$OUT/bench.md"
fi
if [ "$CNN" = 1 ]; then
  # The convolution benchmark and the Fashion-MNIST CNN (DATA: the IDX folder)
  # the full check above ran the cnn group through cuDNN (the default); the
  # windows-and-GEMM path on CUDA is checked here
  echo "== cnn differential check without cuDNN (KILN_CUDNN=0)"
  KILN_CUDNN=0 "$BIN/kiln-check" --group cnn > "$OUT/check_windows.txt" 2>&1
  grep -E "FAIL|passed," "$OUT/check_windows.txt" | tail -40
  echo "== cnn differential check on cuDNN's legacy calls (KILN_CUDNN_LEGACY=1)"
  KILN_CUDNN_LEGACY=1 "$BIN/kiln-check" --group cnn > "$OUT/check_legacy.txt" 2>&1
  grep -E "FAIL|passed," "$OUT/check_legacy.txt" | tail -40
  echo "== cnn differential check in benchmark mode (KILN_CUDNN_BENCHMARK=1: engines timed, legacy algorithms where quicker)"
  KILN_CUDNN_BENCHMARK=1 "$BIN/kiln-check" --group cnn > "$OUT/check_benchmark.txt" 2>&1
  grep -E "FAIL|passed," "$OUT/check_benchmark.txt" | tail -40
  echo "== cnn benchmark"
  "$BIN/kiln" bench/cnn_bench.rhai > "$OUT/cnn_kiln.txt" 2>&1 || tail -3 "$OUT/cnn_kiln.txt"
  PYTHONUNBUFFERED=1 python3 bench/cnn_bench.py > "$OUT/cnn_torch.txt" 2>&1 || tail -3 "$OUT/cnn_torch.txt"
  python3 bench/compare.py "$OUT/cnn_kiln.txt" "$OUT/cnn_torch.txt" "$OUT/cnn.csv" | tee "$OUT/cnn.md"
  echo "== cnn benchmark on cuDNN's legacy calls (KILN_CUDNN_LEGACY=1)"
  KILN_CUDNN_LEGACY=1 "$BIN/kiln" bench/cnn_bench.rhai > "$OUT/cnn_kiln_legacy.txt" 2>&1 || tail -3 "$OUT/cnn_kiln_legacy.txt"
  python3 bench/compare.py "$OUT/cnn_kiln_legacy.txt" "$OUT/cnn_torch.txt" "$OUT/cnn_legacy.csv" | tee "$OUT/cnn_legacy.md"
  if [ -n "${DATA:-}" ]; then
    KILN_PROGRESS=plain timeout "${TRAIN_TIMEOUT:-300}" "$BIN/kiln" --device cuda scripts/train_cnn.rhai "$DATA" 2>&1 | grep -v "^train:" | tail -20 | tee "$OUT/train_cnn.txt"
  fi
fi
if [ "$GPT" = 1 ]; then
  # The fused attention kernels' differential check first: the benchmarks and
  # the GPT run use them only when it passes (KILN_FLASH=0 otherwise).
  echo "== fused attention kernels against the CPU (kiln-check --group attention)"
  if "$BIN/kiln-check" --group attention > "$OUT/check_attention.txt" 2>&1; then
    export KILN_FLASH=1
    echo "fused attention: $(tail -1 "$OUT/check_attention.txt"): benchmarks use the kernels"
  else
    export KILN_FLASH=0
    echo "fused attention FAILED its check: $(tail -1 "$OUT/check_attention.txt"); benchmarks run the blocked path"
    grep -v " ok$" "$OUT/check_attention.txt" | head -20
  fi
  echo "== attention and GPT benchmark (KILN_FLASH=$KILN_FLASH)"
  attention_benchmark
  if [ "$KILN_FLASH" = 1 ]; then
    echo "== the same attention benchmark on the blocked path (KILN_FLASH=0)"
    KILN_FLASH=0 "$BIN/kiln" bench/attention_bench.rhai > "$OUT/attention_kiln_blocked.txt" 2>&1 || tail -3 "$OUT/attention_kiln_blocked.txt"
  fi
  echo "== attention memory at L = 16k"
  "$BIN/kiln" bench/probe/attention_memory.rhai 2>&1 | tee "$OUT/attention_memory.txt"
  echo "== scripts/train_gpt.rhai (full size, bf16 autocast)"
  KILN_PROGRESS=plain timeout "${GPT_TIMEOUT:-400}" "$BIN/kiln" --device cuda scripts/train_gpt.rhai 2>&1 | grep -v "^train:" | tail -40 | tee "$OUT/train_gpt.txt"
fi
if [ "$GOLDEN" = 1 ]; then
  # The golden scripts again, on the GPU: output must match the CPU's golden files
  # once the device suffix is taken out.
  echo "== golden scripts on cuda"
  pass=0; fail=0
  mkdir -p "$OUT/golden-cuda"
  for f in tests/scripts/*.rhai; do
    b=${f%.rhai}
    got="$OUT/golden-cuda/$(basename "$b").out"
    "$BIN/kiln" --device cuda "$f" first second 2>&1 | sed -e "s/, device='cuda:0'//" -e "s|^error: tests/scripts/|error: |" \
      -e 's/ is not available: .*/ is not available: <reason>/' > "$got"
    if diff -q "$b.out" "$got" > /dev/null; then pass=$((pass+1)); else fail=$((fail+1)); echo "differs: $f"; diff "$b.out" "$got" | head -6; fi
  done
  echo "golden on cuda: $pass same, $fail differ"
  # The PyTorch verifiers, on the CPU's golden files and on the GPU's output
  # (which may differ from the CPU's in the last bits: checked to 1e-6)
  echo "== PyTorch verifiers"
  for v in tests/scripts/verify/*.py; do
    [ "$(basename "$v")" = golden.py ] && continue
    echo "$(basename "$v"): cpu: $(cd tests/scripts/verify && python3 "$(basename "$v")" 2>&1 | tail -1)"
    echo "$(basename "$v"): cuda: $(cd tests/scripts/verify && KILN_GOLDEN_DIR="$OUT/golden-cuda" python3 "$(basename "$v")" 2>&1 | tail -1)"
  done
fi
# fewer files to bring back: everything in one archive
tar czf results.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv results.tgz "$OUT/results.tgz"
echo "results in $OUT/results.tgz"
