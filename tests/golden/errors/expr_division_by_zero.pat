// semantic: division by zero in an expression
op a: spmm(M = 64, K = 64, N = 8) {
    split k -> k0, k1 : _, 8 / 0;
}
