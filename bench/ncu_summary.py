"""Sums the kernel durations of Nsight Compute CSV files (ncu --csv
--metrics gpu__time_duration.sum) by kernel name and prints each file's
total and its heaviest kernels, for bench/profile.sh.

    python3 bench/ncu_summary.py TITLE KILN.csv TORCH.csv"""
import csv
import sys
from collections import defaultdict


def kernels(path):
    """{short kernel name: [launches, microseconds]} of one ncu CSV file."""
    out = defaultdict(lambda: [0, 0.0])
    with open(path, newline="") as f:
        rows = [l for l in f if l.startswith('"')]  # ncu's own log lines are unquoted
    for r in csv.DictReader(rows):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        name = r["Kernel Name"].split("(")[0].split("<")[0][:60]
        out[name][0] += 1
        scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}
        out[name][1] += float(r["Metric Value"].replace(",", "")) * scale.get(r["Metric Unit"], 1e-3)
    return out


title = sys.argv[1]
for side, path in zip(("kiln", "torch"), sys.argv[2:]):
    try:
        k = kernels(path)
    except (OSError, KeyError, ValueError) as e:
        print(f"{title} {side}: unreadable ({e})")
        continue
    total = sum(v[1] for v in k.values())
    launches = sum(v[0] for v in k.values())
    print(f"== {title} {side}: {total / 1e3:.3f} ms GPU time in {launches} launches")
    for name, (n, us) in sorted(k.items(), key=lambda kv: -kv[1][1])[:25]:
        print(f"  {us / 1e3:8.3f} ms {n:5d}x  {name}")
