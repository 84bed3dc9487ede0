"""Pairs kiln's and PyTorch's RESULT lines into a table with ratios, and a CSV.

usage: compare.py KILN_OUTPUT TORCH_OUTPUT CSV_PATH
Higher is better for GB/s and TFLOP/s (ratio = kiln / torch); lower is better
for us/op and ms/step (ratio = kiln / torch as well, so < 1 means kiln is cheaper).
"""
import sys


def parse(path):
    out = {}
    for line in open(path, encoding="utf-8", errors="replace"):
        if line.startswith("RESULT,"):
            case, value, unit = line.strip()[len("RESULT,"):].rsplit(",", 2)
            out[case] = (float(value), unit)
    return out


kiln, torch = parse(sys.argv[1]), parse(sys.argv[2])
rows = ["case,unit,kiln,pytorch,kiln/pytorch"]
print(f"| case | unit | kiln | PyTorch | kiln/PyTorch |\n| --- | --- | --- | --- | --- |")
for case, (tv, unit) in torch.items():
    kv = kiln.get(case, (float("nan"), unit))[0]
    ratio = kv / tv if tv else float("nan")
    print(f"| {case} | {unit} | {kv:.2f} | {tv:.2f} | {ratio:.2f} |")
    rows.append(f"\"{case}\",{unit},{kv},{tv},{ratio}")
for case, (kv, unit) in kiln.items():
    if case not in torch:
        print(f"| {case} | {unit} | {kv:.2f} | n/a | n/a |")
        rows.append(f"\"{case}\",{unit},{kv},,")
open(sys.argv[3], "w").write("\n".join(rows) + "\n")
