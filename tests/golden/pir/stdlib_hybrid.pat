// hybrid: 32x64 blocks, half kept, 2:4 inside; and 16x32 blocks with 1:4.
include "hybrid.pat";
op h1: spmm(M = 3072, K = 768, N = 512) { apply hybrid(32, 64, 50%); }
op h2: spmm(M = 1000, K = 1000, N = 64) { apply hybrid(16, 32, 3, n = 1, group = 4); }
