// op: spmm without its size M
op a: spmm(K = 64, N = 8);
