op s: spmm(M = 64, K = 0, N = 1, dtype = f64);
op t: conv(M = 1, K = 1, N = 1);
op v: spmm(M = 8, K = 8);
op w: spmm(M = 8, K = 8, N = 8, bias = 1);
