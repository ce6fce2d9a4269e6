// The design's running example: M0_96 K0_24^12 K1_8 M1_32 K2_4^2.
op ffn: spmm(M = 3072, K = 768, N = 512) {
    split m -> m0, m1 : 96, 32;
    split k -> k0, k1, k2 : 24, 8, 4;
    reorder m0, k0, k1, m1, k2;
    perforate k0 keep 50%;
    perforate k2 keep 2;
}
