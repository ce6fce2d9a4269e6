// semantic: a percentage where an integer split factor is needed
op a: spmm(M = 64, K = 64, N = 8) {
    split k -> k0, k1 : _, 25%;
}
