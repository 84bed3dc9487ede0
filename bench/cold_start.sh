#!/usr/bin/env bash
# The first CUDA use of a fresh process, on the GPU machine, from the
# repository root with the binaries of bench/build-for-device.sh in .device/bin.
# Each "cold" case gets a new, empty driver compute cache (CUDA_CACHE_PATH), so
# nothing an earlier run compiled helps it; "warm" repeats the case on the cache
# the cold run filled. bench/device.sh runs this first, before anything else has
# touched the GPU or read the binary. Prints one "case seconds" line each.
set -u
BIN=${BIN:-.device/bin}
TINY='print(ones([2]).sum().item())'
wall() { # wall() LABEL CACHE_DIR [ENV=VALUE...] -- ARGS...: the command's wall time in seconds
    local label=$1 cache=$2; shift 2
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
    local t0 t1
    t0=$(date +%s.%N)
    env CUDA_CACHE_PATH="$cache" "${envs[@]}" "$BIN/kiln" --device cuda "$@" > /tmp/kiln-cold.out 2>&1 || { echo "$label failed:"; tail -3 /tmp/kiln-cold.out; }
    t1=$(date +%s.%N)
    awk -v l="$label" -v a="$t0" -v b="$t1" 'BEGIN { printf "%s %.2f\n", l, b - a }'
}
sass=$(mktemp -d); ptx=$(mktemp -d); train=$(mktemp -d); mods=$(mktemp -d)
wall "cold tiny (SASS)" "$sass" -- -e "$TINY"
wall "warm tiny (SASS)" "$sass" -- -e "$TINY"
wall "cold train_digits (SASS)" "$train" -- scripts/train_digits.rhai
wall "cold tiny (KILN_FORCE_PTX=1)" "$ptx" KILN_FORCE_PTX=1 -- -e "$TINY"
grep -h "compiling GPU kernels" /tmp/kiln-cold.out
wall "warm tiny (KILN_FORCE_PTX=1)" "$ptx" KILN_FORCE_PTX=1 -- -e "$TINY"
# nine of the twelve kernel modules, each compiled by the driver on its first use
wall "cold jit_modules (KILN_FORCE_PTX=1)" "$mods" KILN_FORCE_PTX=1 KILN_LOG_MODULES=1 -- bench/jit_modules.rhai
grep -h "kiln: kernel module" /tmp/kiln-cold.out
"$BIN/kiln" --device cuda -e 'let x = ones([2]) + 1.0; print(cuda::device_info())'
KILN_FORCE_PTX=1 CUDA_CACHE_PATH="$ptx" "$BIN/kiln" --device cuda -e 'print(cuda::device_info())'
rm -rf "$sass" "$ptx" "$train" "$mods"
