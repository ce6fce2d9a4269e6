// op: an unknown layout
op a: spmm(M = 64, K = 64, N = 8, layout = mk);
