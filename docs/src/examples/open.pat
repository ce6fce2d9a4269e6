op a: spmm(M = 8, K = 8, N = 8) {
    perforate k keep 2;
