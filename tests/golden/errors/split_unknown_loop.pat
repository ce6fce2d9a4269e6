// semantic: split of a loop that does not exist
op a: spmm(M = 64, K = 64, N = 8) {
    split n -> n0, n1 : 8, 8;
}
