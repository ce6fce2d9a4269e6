// semantic: a percentage that rounds to zero kept iterations
op a: spmm(M = 64, K = 64, N = 8) {
    split k -> k0, k1 : 16, 4;
    perforate k1 keep 10%;
}
