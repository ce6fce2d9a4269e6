// semantic: perforate of a loop that does not exist (k0 was never made)
op a: spmm(M = 64, K = 64, N = 8) {
    split k -> k1, k2 : 16, 4;
    perforate k0 keep 2;
}
