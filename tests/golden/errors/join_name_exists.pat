// semantic: join into a name that another loop already has
op a: spmm(M = 64, K = 64, N = 8) {
    split k -> k0, k1, k2 : 4, 4, 4;
    join k1, k2 -> k0;
}
