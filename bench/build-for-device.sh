#!/usr/bin/env bash
# Builds the release binaries the GPU machine runs (it has no Rust toolchain)
# into .device/bin, which the device run carries, gzipped (the carry limit is
# 64 MiB; bench/device.sh unpacks them). Run from the repository root. With
# ptxas found (KILN_PTXAS, CUDA_HOME, CUDA_PATH or PATH; see the README) the
# kernels are embedded as SASS too, so the GPU machine does not JIT them.
set -euo pipefail
cargo build --release --bins
mkdir -p .device/bin
rm -f .device/bin/kiln .device/bin/kiln-check .device/bin/kiln.gz .device/bin/kiln-check.gz
cp target/release/kiln target/release/kiln-check .device/bin/
# symbols are not needed there
strip .device/bin/kiln .device/bin/kiln-check
gzip -f .device/bin/kiln .device/bin/kiln-check
ls -la .device/bin
