// layer.pat - three pruned layers compiled to an object for main.c.
include "all.pat";

// 2:4 sparsity, PyTorch layout: X is N x K, C is N x M.
op attn: spmm(M = 96, K = 100, N = 24, layout = nk) {
    weights = random(seed = 1, kind = heads, group = 16);
    apply nm(2, 4);
}

// Blocks of 16 x 32, half kept, 2:4 inside; X is K x N, C is M x N.
op proj: spmm(M = 130, K = 128, N = 40) {
    weights = random(seed = 2);
    apply hybrid(16, 32, 50%);
}

// 32 x 32 blocks, half kept; large enough (163M multiply-adds) that _run
// uses both threads it is given (each must get at least 8M), and X (2.5 MB)
// large enough that each thread walks its 300 columns in two chunks, the
// second taking the remainder (128 + 176, 128 + 168).
op ffn: spmm(M = 512, K = 1060, N = 600) {
    weights = random(seed = 3);
    apply block(32, 32, 50%);
}
