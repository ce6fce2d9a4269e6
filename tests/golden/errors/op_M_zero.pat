// op: M = 0 is out of range
op a: spmm(M = 0, K = 64, N = 8);
