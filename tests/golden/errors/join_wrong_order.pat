// semantic: join of adjacent loops listed inner first
op a: spmm(M = 64, K = 64, N = 8) {
    split k -> k0, k1 : 16, 4;
    join k1, k0 -> kk;
}
