#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""sass-loops.py - the loops of each kernel of a cubin, by instruction class.

    ptxas -arch=sm_90 out/NAME.ptx -o NAME.cubin
    scripts/sass-loops.py NAME.cubin [KERNEL...]

For every kernel (or those named): its instruction count, then each loop
(a backward branch), innermost first, with how many instructions of each
class it holds (FFMA, HMMA, LDS, LDG, LDGSTS, ...), so that a change to
the NVPTX backend can be judged on a machine without a GPU: the share of
FMAs or mma in the inner loop, the loads per FMA, the address arithmetic.

It runs the CUDA toolkit's cuobjdump -sass.  CUDA 13's toolkit ships none
here; Debian's nvidia-cuda-toolkit (11.8, non-free) has one, but it reads
only the ELF header of CUDA 12 and earlier (ABI version 7, the SM in the
low byte of e_flags): with --rewrite-header this script copies the cubin
with its header in that form first (the code is unchanged).  Set CUOBJDUMP
to the one to use.
"""
import collections
import os
import re
import struct
import subprocess
import sys
import tempfile


def old_header(path):
    """A copy of the cubin with the pre-12.x ELF header that old cuobjdumps read."""
    data = bytearray(open(path, "rb").read())
    if data[:4] != b"\x7fELF" or len(data) < 0x34:
        sys.exit(f"{path}: not an ELF file")
    sm = (struct.unpack_from("<I", data, 0x30)[0] >> 8) & 0xFF
    data[8] = 7  # EI_ABIVERSION
    struct.pack_into("<I", data, 0x30, (sm << 16) | 0x500 | sm)
    fd, tmp = tempfile.mkstemp(suffix=".cubin")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return tmp


def main(argv):
    rewrite = "--rewrite-header" in argv
    args = [a for a in argv if a != "--rewrite-header"]
    if not args:
        sys.exit(__doc__)
    cubin, want = args[0], set(args[1:])
    path = old_header(cubin) if rewrite else cubin
    try:
        sass = subprocess.run([os.environ.get("CUOBJDUMP", "cuobjdump"), "-sass", path], check=True,
                              capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"cuobjdump failed: {e}")
    finally:
        if rewrite:
            os.unlink(path)
    parts = re.split(r"\n\s*Function : (\S+)\n", sass)
    for name, body in zip(parts[1::2], parts[2::2]):
        if want and name not in want:
            continue
        ins = [(int(m.group(1), 16), m.group(2).strip())
               for m in re.finditer(r"/\*([0-9a-f]{4,})\*/\s+(.*?);", body)]
        at = {a: j for j, (a, _) in enumerate(ins)}
        loops = []
        for j, (a, text) in enumerate(ins):
            m = re.search(r"BRA .*0x([0-9a-f]+)", text)
            if m and int(m.group(1), 16) < a and int(m.group(1), 16) in at:
                loops.append((at[int(m.group(1), 16)], j))
        print(f"{name}: {len(ins)} instructions, {len(loops)} loops")
        for first, last in sorted(loops, key=lambda l: l[1] - l[0]):
            count = collections.Counter()
            for _, text in ins[first:last + 1]:
                if text.startswith("@!PT "):
                    continue  # never issued (ptxas's padding)
                op = re.sub(r"^@!?U?P\w+\s+", "", text).split()[0]
                count[op.split(".")[0]] += 1
            classes = ", ".join(f"{k} {v}" for k, v in count.most_common(12))
            print(f"  loop {ins[first][0]:#x}-{ins[last][0]:#x}, {last - first + 1} instructions: {classes}")


if __name__ == "__main__":
    main(sys.argv[1:])
