// prune.pat - prune seeded weights with two patterns and compare them.
include "all.pat";

// Weights whose magnitudes come in 64 x 64 "heads": blocks fit them.
op heads: spmm(M = 512, K = 512, N = 128) {
    weights = random(seed = 7, kind = heads, group = 64);
    apply hybrid(32, 32, 50%);
}

// The same shape with a scale per output row: horizontal tiles fit it.
op rows: spmm(M = 512, K = 512, N = 128) {
    weights = random(seed = 7, kind = rows);
    calibration = random(seed = 8);
    importance = wanda;
    apply tile_h(32, 25%);
}
