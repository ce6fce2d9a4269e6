#!/usr/bin/env python3
"""make_files.py - writes the small tensor files the examples of
docs/language.md bind (Python 3 standard library only; deterministic).

    python3 docs/src/examples/w/make_files.py

layer.safetensors  encoder.0.weight BF16 [8, 8] (the values of w.npy) and
                   encoder.0.bias F32 [8]
w.npy              float32 '<f4' [8, 8], the weight [out, in]
calib.npy          float16 '<f2' [16, 8], activations [tokens, in]
scores.npy         float32 '<f4' [8, 8], non-negative importance scores
wide.npy           float32 '<f4' [16, 8], a weight stored [in, out]
w64.npy            float64 '<f8' [8, 8], NumPy's default dtype
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def weight(n):
    # multiples of 1/16 below 2: exact in float16, bfloat16 and float32
    return [((i * 37) % 61 - 30) / 16.0 for i in range(n)]


def npy(name, shape, vals, descr="<f4"):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, ", ".join(str(s) for s in shape))
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    code = {"<f4": "f", "<f2": "e", "<f8": "d"}[descr]
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(vals), code), *vals))


def bf16(vals):
    return b"".join(struct.pack("<f", v)[2:] for v in vals)  # exact: low half is zero


def safetensors(name, tensors, meta):
    header, data = {"__metadata__": meta}, b""
    for tname, dtype, shape, raw in tensors:
        header[tname] = {"dtype": dtype, "shape": shape,
                         "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


w = weight(64)
npy("w.npy", (8, 8), w)
npy("calib.npy", (16, 8), [((i * 13) % 23 - 11) / 4.0 for i in range(128)], "<f2")
npy("scores.npy", (8, 8), [((i * 7) % 11) / 8.0 for i in range(64)])
npy("wide.npy", (16, 8), weight(128))
npy("w64.npy", (8, 8), w, "<f8")
safetensors("layer.safetensors",
            [("encoder.0.weight", "BF16", [8, 8], bf16(w)),
             ("encoder.0.bias", "F32", [8], struct.pack("<8f", *[0.5] * 8))],
            {"format": "pt"})
