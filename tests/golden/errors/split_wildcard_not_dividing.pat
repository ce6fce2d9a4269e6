// semantic: split with '_' where the other factors do not divide the length, without 'pad'
op a: spmm(M = 1000, K = 64, N = 8) {
    split m -> m0, m1 : _, 48;
}
