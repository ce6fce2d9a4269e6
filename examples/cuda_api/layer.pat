// layer.pat - two linear layers for the GPU launcher example (main.c).
include "all.pat";

// A feed-forward expansion: 32x32 blocks, a quarter kept.
op up: spmm(M = 1000, K = 768, N = 512) {
    weights = random(seed = 3);
    apply block(32, 32, 25%);
}

// An attention projection in PyTorch's layout: 2:4 along k.
op proj: spmm(M = 768, K = 768, N = 200, layout = nk) {
    weights = random(seed = 4);
    apply nm(2, 4);
}
