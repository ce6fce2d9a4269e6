// semantic: split factors multiply to more than the length, without 'pad' (hint: pad 24)
op a: spmm(M = 1000, K = 64, N = 8) {
    split m -> m0, m1, m2 : 4, 8, 32;
}
