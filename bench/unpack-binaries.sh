#!/usr/bin/env bash
# Runs on the GPU machine: unpacks the binaries bench/build-for-device.sh
# packed (xz, or gzip from older builds) in each folder given, in place, and
# makes them executable. Without the xz tool, Python's lzma module unpacks.
#
#   bash bench/unpack-binaries.sh .device/bin [.device/base]
set -u
for dir in "$@"; do
  for f in "$dir"/*.gz; do [ -e "$f" ] && gunzip -f "$f"; done
  for f in "$dir"/*.xz; do
    [ -e "$f" ] || continue
    xz -d -f "$f" 2>/dev/null || python3 - "$f" <<'PY'
import lzma, os, shutil, sys
src = sys.argv[1]
with lzma.open(src) as i, open(src[:-3], "wb") as o:
    shutil.copyfileobj(i, o)
os.remove(src)
PY
  done
  chmod +x "$dir"/* 2>/dev/null
done
true
