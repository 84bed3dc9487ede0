"""Puts the kiln/PyTorch ratios of several builds side by side.

usage: ab_table.py NAME=CSV [NAME=CSV ...]
Each CSV is what compare.py wrote for one build of kiln against the same
PyTorch run; one row per case, one ratio column per build.
"""
import csv
import sys

builds = [arg.split("=", 1) for arg in sys.argv[1:]]
ratios, cases = {}, []
for name, path in builds:
    with open(path, encoding="utf-8") as f:
        for row in csv.DictReader(f):
            case = row["case"]
            if case not in cases:
                cases.append(case)
            ratios[(name, case)] = row["kiln/pytorch"]
print("| case | " + " | ".join(name for name, _ in builds) + " |")
print("| --- |" + " --- |" * len(builds))
for case in cases:
    cells = []
    for name, _ in builds:
        value = ratios.get((name, case), "")
        cells.append(f"{float(value):.3f}" if value else "n/a")
    print(f"| {case} | " + " | ".join(cells) + " |")
