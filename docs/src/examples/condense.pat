op a: spmm(M = 64, K = 64, N = 8) {
    split k -> k0, k1 : 16, 4;
    perforate k1 keep 2;
    condense k1 on x;
}
