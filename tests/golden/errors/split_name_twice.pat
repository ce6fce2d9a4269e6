// semantic: split naming the same new loop twice
op a: spmm(M = 64, K = 64, N = 8) {
    split k -> k0, k0 : 16, 4;
}
