// semantic: reorder naming a loop that does not exist
op a: spmm(M = 64, K = 64, N = 8) {
    split k -> k0, k1 : 16, 4;
    reorder k1, k;
}
