// op: an operator kind other than spmm
op a: conv2d(M = 64, K = 64, N = 8);
