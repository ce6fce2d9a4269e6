#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""peers_table.py - patc beside what users would pick instead, from one device run.

    peers_table.py GPU_CSV PEERS_CSV

GPU_CSV is gpu_bench's (patc's kernels; speedup_vs_dense over cuBLAS of the same dtype, measured
in the same run); PEERS_CSV is ../shared/bench/gpu_peers.py's gpu_baselines.csv (Triton BSR,
cuSPARSE CSR, cuSPARSELt 2:4 through PyTorch; speedup_vs_dense over cuBLAS through PyTorch, in
its own run). Both are ratios over dense cuBLAS of the same dtype on the same device, so they
compare. Prints, per sparsity and dtype, the geometric means over the shapes both measured of
patc's fastest pattern and of the fastest peer, and their ratio; then the shapes where the peer
is ahead. The paper's shapes are named M/K/N in both (the peers' "layer" column).
"""
import csv
import math
import sys


def geo(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    best = {}  # (shape, sparsity %, dtype) -> (speedup, pattern)
    with open(argv[1]) as f:
        for r in csv.DictReader(f):
            if not r["method"].startswith("patc"):
                continue
            key = (r["shape"], float(r["sparsity"]), "fp32" if r["dtype"] == "f32" else r["dtype"])
            s = float(r["speedup_vs_dense"])
            if s > best.get(key, (0, ""))[0]:
                best[key] = (s, r["pattern"])
    peer = {}
    with open(argv[2]) as f:
        for r in csv.DictReader(f):
            if r["status"] != "ok" or not r["speedup_vs_dense"] or float(r["sparsity"] or 0) <= 0:
                continue
            key = (r["layer"], 100 * float(r["sparsity"]), r["dtype"])
            s = float(r["speedup_vs_dense"])
            if s > peer.get(key, (0, ""))[0]:
                peer[key] = (s, r["method"] + " " + r["pattern"])
    print("| sparsity | dtype | shapes | patc (best pattern) | best peer | patc / peer |")
    print("|---:|---|---:|---:|---:|---:|")
    behind = []
    for dt in ("fp32", "bf16"):
        for sp in (50.0, 75.0, 93.75):
            both = sorted(k[0] for k in best if k[1] == sp and k[2] == dt and k in peer)
            if not both:
                continue
            p = geo([best[(s, sp, dt)][0] for s in both])
            q = geo([peer[(s, sp, dt)][0] for s in both])
            print(f"| {sp:g}% | {dt} | {len(both)} | {p:.2f}x | {q:.2f}x | {p / q:.2f} |")
            behind += [(dt, sp, s) for s in both if best[(s, sp, dt)][0] < peer[(s, sp, dt)][0]]
    if behind:
        print("\nwhere the best peer is ahead:")
        for dt, sp, s in behind:
            b, pb = best[(s, sp, dt)]
            q, pq = peer[(s, sp, dt)]
            print(f"  {dt} {sp:g}% {s}: patc {pb} {b:.2f}x, {pq} {q:.2f}x")


if __name__ == "__main__":
    main(sys.argv)
