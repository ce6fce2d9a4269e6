// tile_v and tile_h on a 1000-row weight.
include "tile.pat";
op tv: spmm(M = 1000, K = 768, N = 128) { apply tile_v(128, 50%); }
op th: spmm(M = 1000, K = 768, N = 128) { apply tile_h(96, 25%); }
