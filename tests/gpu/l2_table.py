#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""l2_table.py - what limits patc's staged kernels, from one device run's gpu.csv.

    l2_table.py GPU_CSV

gpu_bench writes, for each kernel whose X is staged, the GB its blocks move between L2 and the
multiprocessors (l2_gb, ptx_traffic's count, as `patc --explain` prints it) and that over its
time as a fraction of the L2 read ceiling measured in the same run (l2_frac), beside its FLOP
over cuBLAS's rate (flop_frac). Prints, per pattern, dtype and sparsity, the geometric means of
both over the shapes measured and the largest l2_frac: near 1 the kernel is bound by L2, and a
faster schedule of the same mapping cannot help; only more rows sharing each X row can.
"""
import collections
import csv
import math
import sys


def geo(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    rows = collections.defaultdict(list)  # (pattern, dtype, sparsity) -> [(l2_frac, flop_frac)]
    with open(argv[1]) as f:
        for r in csv.DictReader(f):
            if not r["method"].startswith("patc") or not r.get("l2_frac"):
                continue
            rows[(r["pattern"], r["dtype"], float(r["sparsity"]))].append((float(r["l2_frac"]), float(r["flop_frac"])))
    if not rows:
        print("no staged kernel with an L2 fraction (ceilings not measured, or nothing staged)")
        return
    print("| pattern | dtype | sparsity | shapes | L2 fraction | largest | FLOP fraction |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for (p, dt, s), v in sorted(rows.items()):
        l2 = [x for x, _ in v]
        print(f"| {p} | {dt} | {s:g}% | {len(v)} | {geo(l2):.2f} | {max(l2):.2f} | {geo([y for _, y in v]):.2f} |")
    print("\nL2 fraction: what the kernel's blocks move from L2 over its time, over the L2 read ceiling; "
          "FLOP fraction: its FLOP over cuBLAS's rate; geometric means over the shapes")


if __name__ == "__main__":
    main(sys.argv)
