// semantic: join of a perforated loop
op a: spmm(M = 64, K = 64, N = 8) {
    split k -> k0, k1 : 16, 4;
    perforate k1 keep 2;
    join k0, k1 -> kk;
}
