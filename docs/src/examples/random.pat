// Seeded weights of each kind, each under a pattern of its shape.
include "all.pat";

op plain: spmm(M = 32, K = 32, N = 8) {
    weights = random(seed = 1);                           // kind = plain
    apply block(16, 16, 50%);
}

op heads: spmm(M = 32, K = 32, N = 8) {
    weights = random(seed = 1, kind = heads, group = 16); // a scale per 16 x 16 block
    apply block(16, 16, 50%);
}

op rows: spmm(M = 32, K = 32, N = 8) {
    weights = random(seed = 1, kind = rows);              // a scale per output row
    apply tile_h(16, 50%);
}

op cols: spmm(M = 32, K = 32, N = 8) {
    weights = random(seed = 1, kind = cols);              // a scale per input column
    apply tile_v(16, 50%);
}
