// gemm.pat - four linear layers of a BERT-base encoder and their patterns.
include "all.pat";

// The attention query projection: 32x32 blocks, a quarter of them kept.
op attn_q: spmm(M = 768, K = 768, N = 512, dtype = f16, layout = nk) {
    weights = random(seed = 1);
    apply block(32, 32, 25%);
}

// The feed-forward expansion: the hybrid, half the 32x64 blocks and 2:4
// inside them (25% density in all).
op ffn_up: spmm(M = 3072, K = 768, N = 512) {
    weights = random(seed = 2);
    apply hybrid(32, 64, 50%, n = 2, group = 4);
}

// A 3x3 convolution as im2col (K = 64 * 3 * 3): 2:4 along k.
op conv3x3: spmm(M = 64, K = 576, N = 3136) {
    apply nm(2, 4);
}

// Written out by hand: the paper's Fig. 8 on a 1000-row weight, padded to
// 1024 rows, with k1 gathered into a packed buffer.
op fig8: spmm(M = 1000, K = 1024, N = 256) {
    split m -> i0, i1, i2 : 4, 8, 32 pad 24;
    split k -> k0, k1, k2 : 32, 8, 4;
    reorder i0, i1, k0, k1, k2, i2;
    perforate i1 keep 3;
    perforate k0 keep 28;
    perforate k1 keep 5;
    condense k1 on x;
}
