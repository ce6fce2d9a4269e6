#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""layer.py - runs a kernel patc compiled, from Python, through the shared
library `patc layer.pat -o out --emit=so` links (see README.md here).

    python3 layer.py out/layer.so [N]

ctypes only, no NumPy: op `attn` (X is N x K, C is N x M, PyTorch's layout;
C = gelu(X W^T + bias), GELU's erf form) on a deterministic X of N tokens
(default 24, the op's; the kernel takes any N) with two threads, checked
against float64 on the masked weight that `layer_attn_unpack` rebuilds:
once with the bias compiled in (`layer_attn_packed.bias`), once with a
bias of the caller's in a weights struct of its own (as a framework passes
its module's bias), once with none (bias NULL).  With NumPy or PyTorch, pass
the tensors' data pointers (`t.ctypes.data`, `t.data_ptr()`) instead.
Exits 1 if a relative error exceeds 1e-5.
"""
import ctypes
import math
import sys

M, K = 96, 100  # layer_attn_M, _K in layer.h; N: any (24, the op's, by default)
floats = ctypes.POINTER(ctypes.c_float)


class Weights(ctypes.Structure):
    """layer_attn_weights in layer.h: the packed values, the bias (M
    floats or NULL) and one index array per loop of the pattern (3)."""
    _fields_ = [("values", floats), ("bias", floats), ("index", ctypes.POINTER(ctypes.c_int32) * 3)]


def gelu(x):
    return 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0)))


def error(X, C, W, bias, N):
    """||C - gelu(X W^T + bias)|| / ||gelu(X W^T + bias)||, in float64."""
    num = den = 0.0
    for n in range(N):
        x = X[n * K:(n + 1) * K]
        for m in range(M):
            ref = gelu(math.fsum(w * v for w, v in zip(W[m * K:(m + 1) * K], x)) + (bias[m] if bias else 0.0))
            num += (C[n * M + m] - ref) ** 2
            den += ref * ref
    return math.sqrt(num / (den or 1.0))


def main():
    lib = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else "out/layer.so")
    N = int(sys.argv[2]) if len(sys.argv) > 2 else 24
    wp = ctypes.POINTER(Weights)
    lib.layer_attn_run.argtypes = [floats, floats, ctypes.c_int64, wp, ctypes.c_int]
    lib.layer_attn_run.restype = ctypes.c_int
    lib.layer_attn_unpack.argtypes = [wp, floats]
    lib.layer_attn_unpack.restype = None
    packed = Weights.in_dll(lib, "layer_attn_packed")
    W = (ctypes.c_float * (M * K))()
    lib.layer_attn_unpack(ctypes.byref(packed), W)

    X = (ctypes.c_float * (N * K))(*[((i * 37) % 23) / 11.0 - 1.0 for i in range(N * K)])
    mine = (ctypes.c_float * M)(*[0.01 * m - 0.5 for m in range(M)])
    runs = [("its own bias", packed, packed.bias[:M]),
            ("the caller's bias", Weights(packed.values, ctypes.cast(mine, floats), packed.index), mine[:]),
            ("no bias", Weights(packed.values, None, packed.index), None)]
    bad = 0
    for what, w, bias in runs:
        C = (ctypes.c_float * (N * M))()
        if lib.layer_attn_run(X, C, N, ctypes.byref(w), 2) != 0:
            print(f"attn refused N = {N}")
            return 1
        err = error(X, C, W, bias, N)
        print(f"attn from Python, N = {N}, {what}: relative error {err:.2e}")
        bad |= not err < 1e-5
    return bad


if __name__ == "__main__":
    sys.exit(main())
