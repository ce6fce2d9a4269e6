#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""read_safetensors.py FILE - an independent safetensors reader for the tests.

Parses the header with json, checks the offsets cover the data section
exactly and in order, decodes F32/F16/BF16/I32/U8 tensors with struct, and
prints one line per tensor (name, dtype, shape, count, sum of values) and one
per metadata key.  Standard library only.
"""
import json, struct, sys

SIZES = {"F32": 4, "F16": 2, "BF16": 2, "I32": 4, "U8": 1}


def decode(dtype, raw):
    if dtype == "F32":
        return struct.unpack("<%df" % (len(raw) // 4), raw)
    if dtype == "F16":
        return struct.unpack("<%de" % (len(raw) // 2), raw)
    if dtype == "BF16":
        return [struct.unpack("<f", b"\0\0" + raw[i:i + 2])[0] for i in range(0, len(raw), 2)]
    if dtype == "I32":
        return struct.unpack("<%di" % (len(raw) // 4), raw)
    return list(raw)


def main():
    data = open(sys.argv[1], "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    body = data[8 + n:]
    meta = header.pop("__metadata__", {})
    end = 0
    for name, e in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        b, f = e["data_offsets"]
        assert b == end, "gap or overlap before %s" % name
        count = 1
        for s in e["shape"]:
            count *= s
        assert f - b == count * SIZES[e["dtype"]], "size of %s" % name
        vals = decode(e["dtype"], body[b:f])
        print("tensor %s %s %s %d %.6g" % (name, e["dtype"], e["shape"], count, sum(vals)))
        end = f
    assert end == len(body), "data section not covered"
    for k in sorted(meta):
        assert isinstance(meta[k], str)
        print("meta %s %s" % (k, meta[k].splitlines()[0] if meta[k] else ""))


main()
