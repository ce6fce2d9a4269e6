// 8 x 16 bf16 weights: 4 x 8 blocks at 50%, 2:4 inside the kept ones.
include "hybrid.pat";

op q: spmm(M = 8, K = 16, N = 32, dtype = bf16) {
    weights = random(seed = 1, kind = heads, group = 8);  // a scale per 8 x 8 block
    apply hybrid(4, 8, 50%);
}
