#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""layer.py - runs a kernel patc compiled, from Python, through the shared
library `patc layer.pat -o out --emit=so` links (see README.md here).

    python3 layer.py out/layer.so [N]

ctypes only, no NumPy: op `attn` (X is N x K, C is N x M, PyTorch's layout)
on a deterministic X of N tokens (default 24, the op's; the kernel takes
any N) with two threads, checked against a float64 product of
the masked weight that `layer_attn_unpack` rebuilds.  With NumPy or PyTorch,
pass the tensors' data pointers (`t.ctypes.data`, `t.data_ptr()`) instead.
Exits 1 if the relative error exceeds 1e-5.
"""
import ctypes
import math
import sys

M, K = 96, 100  # layer_attn_M, _K in layer.h; N: any (24, the op's, by default)


def main():
    lib = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else "out/layer.so")
    N = int(sys.argv[2]) if len(sys.argv) > 2 else 24
    floats = ctypes.POINTER(ctypes.c_float)
    lib.layer_attn_run.argtypes = [floats, floats, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int]
    lib.layer_attn_run.restype = ctypes.c_int
    lib.layer_attn_unpack.argtypes = [ctypes.c_void_p, floats]
    lib.layer_attn_unpack.restype = None
    packed = ctypes.addressof(ctypes.c_char.in_dll(lib, "layer_attn_packed"))

    X = (ctypes.c_float * (N * K))(*[((i * 37) % 23) / 11.0 - 1.0 for i in range(N * K)])
    C = (ctypes.c_float * (N * M))()
    W = (ctypes.c_float * (M * K))()
    if lib.layer_attn_run(X, C, N, packed, 2) != 0:
        print(f"attn refused N = {N}")
        return 1
    lib.layer_attn_unpack(packed, W)

    num = den = 0.0
    for n in range(N):
        x = X[n * K:(n + 1) * K]
        for m in range(M):
            ref = math.fsum(w * v for w, v in zip(W[m * K:(m + 1) * K], x))
            num += (C[n * M + m] - ref) ** 2
            den += ref * ref
    err = math.sqrt(num / (den or 1.0))
    print(f"attn from Python, N = {N}: relative error {err:.2e}")
    return 0 if err < 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
