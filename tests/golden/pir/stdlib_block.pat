// block(bm, bk, density) on extents no block size divides: m and k padded.
include "block.pat";
op b32: spmm(M = 1000, K = 700, N = 64) { apply block(32, 32, 25%); }
op b8: spmm(M = 100, K = 60, N = 8, dtype = bf16) { apply block(8, 8, 2); }
