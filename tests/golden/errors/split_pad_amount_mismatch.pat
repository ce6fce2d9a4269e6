// semantic: an explicit pad amount that does not match the factors
op a: spmm(M = 1000, K = 64, N = 8) {
    split m -> m0, m1 : 32, 32 pad 20;
}
