// semantic: split names three loops but gives two factors
op a: spmm(M = 64, K = 64, N = 8) {
    split k -> k0, k1, k2 : 16, 4;
}
