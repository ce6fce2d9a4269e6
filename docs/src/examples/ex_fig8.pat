op fig8: spmm(M = 1000, K = 1024, N = 256) {
    split m -> i0, i1, i2 : 4, 8, 32 pad 24;
    split k -> k0, k1, k2 : 32, 8, 4;
    reorder i0, i1, k0, k1, k2, i2;
    perforate i1 keep 3;
    perforate k0 keep 28;
    perforate k1 keep 5;
    condense k1 on x;
}
