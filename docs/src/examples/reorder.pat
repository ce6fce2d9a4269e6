op a: spmm(M = 64, K = 64, N = 8) {
    split m -> m0, m1 : 4, 16;
    split k -> k0, k1 : 4, 16;
    reorder k1, m0;
}
