#!/usr/bin/env bash
# Builds the release binaries the GPU machine runs (it has no Rust toolchain)
# into .device/bin, which the device run carries. Run from the repository root.
set -euo pipefail
cargo build --release --bins
mkdir -p .device/bin
cp target/release/kiln target/release/kiln-check .device/bin/
# the carry limit is 64 MiB: symbols are not needed there
strip .device/bin/kiln .device/bin/kiln-check
ls -la .device/bin
