// semantic: two ops with the same name
op a: spmm(M = 64, K = 64, N = 8);
op a: spmm(M = 32, K = 32, N = 8);
