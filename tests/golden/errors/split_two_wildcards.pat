// semantic: split with two '_' factors
op a: spmm(M = 64, K = 64, N = 8) {
    split k -> k0, k1, k2 : _, _, 4;
}
