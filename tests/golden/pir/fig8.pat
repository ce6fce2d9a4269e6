// The paper's Fig. 8: a 1024x1024 weight, i split 4*8*32, k split 32*8*4,
// loop order i0 i1 k0 k1 k2 i2; perforate i1 keep 3, k0 keep 28, k1 keep 5.
// Flattened value strides: 53760, 17920, 640, 128, 32 (and 1).
op fig8: spmm(M = 1024, K = 1024, N = 1024) {
    split m -> i0, i1, i2 : 4, 8, 32;
    split k -> k0, k1, k2 : 32, 8, 4;
    reorder i0, i1, k0, k1, k2, i2;
    perforate i1 keep 3;
    perforate k0 keep 28;
    perforate k1 keep 5;
}
