include "block.pat";

// A BERT-base query projection: 32x32 blocks, a quarter of them kept.
op attn_q: spmm(M = 768, K = 768, N = 512, dtype = f16) {
    weights = random(seed = 1);
    apply block(32, 32, 25%);
}
