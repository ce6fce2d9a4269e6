// layer.pat - three pruned layers compiled to an object for main.c.
include "all.pat";

// 2:4 sparsity, PyTorch layout: X is N x K, C is N x M; a bias and
// GELU (erf form, PyTorch's default) fused: C = gelu(X W^T + bias).
op attn: spmm(M = 96, K = 100, N = 24, layout = nk, activation = gelu_erf) {
    weights = random(seed = 1, kind = heads, group = 16);
    bias = random(seed = 4);
    apply nm(2, 4);
}

// Blocks of 16 x 32, half kept, 2:4 inside; X is K x N, C is M x N.
// A residual connection: C += W X, adding to what C holds.
op proj: spmm(M = 130, K = 128, N = 40, accumulate = true) {
    weights = random(seed = 2);
    apply hybrid(16, 32, 50%);
}

// 32 x 32 blocks, half kept; large enough (163M multiply-adds) that _run
// uses both threads it is given (each must get at least 8M), and X (2.5 MB)
// large enough that each thread walks its 300 columns in two chunks, the
// second taking the remainder (128 + 176, 128 + 168).  C = relu(W X + bias).
op ffn: spmm(M = 512, K = 1060, N = 600, activation = relu) {
    weights = random(seed = 3);
    bias = random(seed = 5);
    apply block(32, 32, 50%);
}
