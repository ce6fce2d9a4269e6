// semantic: split of a perforated loop
op a: spmm(M = 64, K = 64, N = 8) {
    perforate k keep 32;
    split k -> k0, k1 : 16, 4;
}
