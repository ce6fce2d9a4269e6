// lexical: an integer literal too large to represent
op a: spmm(M = 99999999999999999999999, K = 64, N = 8);
