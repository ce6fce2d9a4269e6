#!/usr/bin/env python3
"""show_safetensors.py FILE - lists what a .safetensors file holds, with the
Python standard library only: every tensor (name, dtype, shape), the entries
of small index tensors (I32, up to 8 entries), small masks (U8, 2-D) drawn
with '#' for a kept weight, then the __metadata__ strings."""
import json, struct, sys

with open(sys.argv[1], "rb") as f:
    (n,) = struct.unpack("<Q", f.read(8))
    header = json.loads(f.read(n))
    data = f.read()
meta = header.pop("__metadata__", {})
for name, t in header.items():
    begin, end = t["data_offsets"]
    raw = data[begin:end]
    line = "%-12s %-4s %s" % (name, t["dtype"], t["shape"])
    if t["dtype"] == "I32" and len(raw) <= 32:
        line += "  " + str(list(struct.unpack("<%di" % (len(raw) // 4), raw)))
    print(line)
    if t["dtype"] == "U8" and len(t["shape"]) == 2 and t["shape"][0] <= 32 and t["shape"][1] <= 64:
        rows, cols = t["shape"]
        for r in range(rows):
            print("    " + "".join("#" if raw[r * cols + c] else "." for c in range(cols)))
for key, value in meta.items():
    lines = value.rstrip("\n").split("\n")
    print("%s = %s" % (key, lines[0]))
    for more in lines[1:]:
        print("  " + more)
