// semantic: split making a loop whose name already exists
op a: spmm(M = 64, K = 64, N = 8) {
    split k -> m, k1 : 16, 4;
}
