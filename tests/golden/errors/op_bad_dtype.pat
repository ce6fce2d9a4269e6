// op: an unknown dtype
op a: spmm(M = 64, K = 64, N = 8, dtype = f64);
