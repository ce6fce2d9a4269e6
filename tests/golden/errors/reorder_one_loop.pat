// semantic: reorder with a single loop
op a: spmm(M = 64, K = 64, N = 8) {
    reorder k;
}
