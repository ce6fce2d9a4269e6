// readme_gpu.pat - the README's example: BERT-base's second feed-forward
// matrix at 25% density, for the CPU or (--target=sm_80) an NVIDIA GPU.
include "tile.pat";

op ffn_down: spmm(M = 768, K = 3072, N = 512) {
    weights = random(seed = 5, kind = cols);    // a scale per column of k
    apply tile_v(32, 25%);
}
