include "tile.pat";

op ffn_down: spmm(M = 768, K = 3072, N = 512) {
    apply tile_h(128, 25%);
}
