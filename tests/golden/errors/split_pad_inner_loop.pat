// semantic: padding a loop that is not the outermost loop of its axis
op a: spmm(M = 64, K = 60, N = 8) {
    split k -> k0, k1 : 6, 10;
    split k1 -> k2, k3 : 3, 4 pad;
}
