#!/usr/bin/env bash
# Builds the release binaries the GPU machine runs (it has no Rust toolchain)
# into .device/bin, which the device run carries, packed by xz (about 9 MB
# each; gzip where xz is missing; the carry limit is 64 MiB; bench/device.sh
# unpacks them through bench/unpack-binaries.sh). Run from the repository
# root. With ptxas found (KILN_PTXAS, CUDA_HOME, CUDA_PATH or PATH; see the
# README) the kernels are embedded as SASS too, so the GPU machine does not
# JIT them.
#
#   bench/build-for-device.sh [--keep-base]
#
# --keep-base first moves the previous build's kiln to .device/base, so that
# one device run can time both builds (bench/device.sh --attention runs the
# attention benchmark with .device/base/kiln too when it is there).
set -euo pipefail
if [ "${1:-}" = "--keep-base" ]; then
  mkdir -p .device/base
  rm -f .device/base/kiln*
  for f in .device/bin/kiln .device/bin/kiln.xz .device/bin/kiln.gz; do
    [ -e "$f" ] && mv "$f" .device/base/
  done
  ls -la .device/base
elif [ -n "${1:-}" ]; then
  echo "build-for-device.sh: unknown flag $1 (flag: --keep-base)" >&2
  exit 2
fi
cargo build --release --bins
mkdir -p .device/bin
rm -f .device/bin/kiln .device/bin/kiln-check .device/bin/kiln*.gz .device/bin/kiln*.xz
cp target/release/kiln target/release/kiln-check .device/bin/
# symbols are not needed there
strip .device/bin/kiln .device/bin/kiln-check
if command -v xz > /dev/null; then
  xz -6 -T0 -f .device/bin/kiln .device/bin/kiln-check
else
  gzip -f .device/bin/kiln .device/bin/kiln-check
fi
ls -la .device/bin
