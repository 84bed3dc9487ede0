"""What each GPU kernel compiles to, without a GPU: registers, spills, stack
and ptxas's performance warnings (a `wgmma` serialised for want of
registers), from the PTX modules the last release build handed to ptxas.

    KILN_PTXAS=... bash bench/build-for-device.sh   # or any release build with ptxas found
    python3 bench/kernel_resources.py [NAME_PART] [--arch 90]

The build writes each module's PTX, as compiled (the Hopper module retargeted
to sm_90a with its kernels' register caps), to
`target/release/build/kiln-*/out/sass/`; this runs `ptxas -v` on them again
(`KILN_PTXAS`, else `$CUDA_HOME/bin`, `$CUDA_PATH/bin` or `PATH`, as the
build looks) and prints the kernels whose names contain NAME_PART. Exit code
1 when one of them spills or has its `wgmma`s serialised. On a GPU,
`kiln-check --resources` reports the loaded kernels the same way.
"""
import glob
import os
import re
import shutil
import subprocess
import sys


def ptxas():
    for p in (os.environ.get("KILN_PTXAS"),
              os.environ.get("CUDA_HOME") and os.path.join(os.environ["CUDA_HOME"], "bin", "ptxas"),
              os.environ.get("CUDA_PATH") and os.path.join(os.environ["CUDA_PATH"], "bin", "ptxas"),
              shutil.which("ptxas")):
        if p and os.path.exists(p):
            return p
    sys.exit("kernel_resources: no ptxas (set KILN_PTXAS; `pip install nvidia-cuda-nvcc` ships one)")


def main():
    args = sys.argv[1:]
    arch = "90"
    if "--arch" in args:
        i = args.index("--arch")
        arch = args[i + 1]
        del args[i:i + 2]
    part = args[0] if args else ""
    dirs = glob.glob("target/release/build/kiln-*/out/sass")
    if not dirs:
        sys.exit("kernel_resources: no target/release/build/kiln-*/out/sass: build with ptxas found first")
    sass = max(dirs, key=os.path.getmtime)
    tool = ptxas()
    bad = 0
    print(f"{'kernel':<44} {'regs':>5} {'spill st/ld':>12} {'stack':>6}  notes")
    for ptx in sorted(glob.glob(os.path.join(sass, "*.ptx"))):
        hopper = ptx.endswith("_sm90a.ptx")
        if hopper and arch != "90":
            continue
        if part and part not in open(ptx).read():
            continue
        target = f"sm_{arch}a" if hopper else f"sm_{arch}"
        out = subprocess.run([tool, f"-arch={target}", "-O3", "-v", "-o", os.devnull, ptx],
                             capture_output=True, text=True)
        if out.returncode != 0:
            print(f"{os.path.basename(ptx)}: ptxas failed: {out.stderr.strip()[:300]}")
            bad = 1
            continue
        notes, kernel, rows = {}, None, {}
        for line in out.stderr.splitlines():
            m = re.search(r"Performance Loss: (.*) for the function '(\w+)'", line)
            if m:
                notes.setdefault(m.group(2), []).append(m.group(1))
            m = re.search(r"Compiling entry function '(\w+)'", line)
            if m:
                kernel = m.group(1)
                rows[kernel] = {}
            m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
            if m and kernel:
                rows[kernel].update(stack=int(m.group(1)), st=int(m.group(2)), ld=int(m.group(3)))
            m = re.search(r"Used (\d+) registers", line)
            if m and kernel:
                rows[kernel]["regs"] = int(m.group(1))
        for k, r in rows.items():
            if part not in k:
                continue
            why = "; ".join(notes.get(k, []))
            if r.get("st", 0) or r.get("ld", 0) or why:
                bad = 1
            print(f"{k:<44} {r.get('regs', 0):>5} {r.get('st', 0):>5}/{r.get('ld', 0):<6} {r.get('stack', 0):>6}  {why}")
    sys.exit(bad)


if __name__ == "__main__":
    main()
