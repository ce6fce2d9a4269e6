// semantic: split factors multiply to less than the loop's length
op a: spmm(M = 64, K = 64, N = 8) {
    split k -> k0, k1 : 4, 8;
}
