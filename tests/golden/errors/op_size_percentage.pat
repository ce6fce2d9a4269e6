// op: a percentage given as a size
op a: spmm(M = 64, K = 50%, N = 8);
